package mcpserver

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Every message a client sends, over HTTP or stdio, is checked here before the SDK reads it, so that every
// message gets a JSON-RPC answer with its id exactly as sent (or none, for a notification): the SDK answers
// some malformed messages with plain-text HTTP errors or ends a stdio session on them, and reads every
// numeric id as a float64 (9007199254740993 came back as …992, 1.5 as 1).

// methodKind says how the server takes a method: a call (with an id) or a notification, and whether its
// params may be left out.
type methodKind struct {
	notification bool
	needsParams  bool
}

// serverMethods is every method the server answers: MCP's client-to-server methods as the SDK serves them
// (their params rule is the SDK's own; TestMethodsAreTheSDKs checks it), the skills extension's and the
// tasks extension's.
var serverMethods = map[string]methodKind{
	"initialize":                       {needsParams: true},
	"ping":                             {},
	"tools/list":                       {},
	"tools/call":                       {needsParams: true},
	"resources/list":                   {},
	"resources/templates/list":         {},
	"resources/read":                   {needsParams: true},
	"resources/subscribe":              {needsParams: true},
	"resources/unsubscribe":            {needsParams: true},
	"prompts/list":                     {},
	"prompts/get":                      {needsParams: true},
	"completion/complete":              {needsParams: true},
	"logging/setLevel":                 {needsParams: true},
	"server/discover":                  {},
	"subscriptions/listen":             {needsParams: true},
	"skills/list":                      {},
	"skills/get":                       {needsParams: true},
	"tasks/get":                        {needsParams: true},
	"tasks/update":                     {needsParams: true},
	"tasks/cancel":                     {needsParams: true},
	"notifications/initialized":        {notification: true},
	"notifications/cancelled":          {notification: true},
	"notifications/roots/list_changed": {notification: true},
	"notifications/progress":           {notification: true, needsParams: true},
}

// Methods lists the methods the server answers (calls and notifications), sorted.
func Methods() []string { return slices.Sorted(maps.Keys(serverMethods)) }

// IsNotification reports whether method is one the server takes as a notification (sent without an id).
func IsNotification(method string) bool { return serverMethods[method].notification }

// rpcError is a JSON-RPC error answered before the SDK sees the message.
type rpcError struct {
	code    int64
	message string
}

func (e *rpcError) Error() string { return e.message }

// jsonNull is the id of an answer to a message whose id could not be read.
var jsonNull = json.RawMessage("null")

// integerID is an id the MCP specification allows as a number: an integer, written without fraction or
// exponent.
var integerID = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// checked is a message that passed the envelope check.
type checked struct {
	// body is the message as the SDK gets it: one of each member, params null left out, and an id the SDK
	// would alter replaced by surrogate.
	body []byte
	// id is the message's id exactly as sent; nil for a notification.
	id json.RawMessage
	// surrogate, when set, stands in for id in body: the SDK's answer carries it, and the transport puts
	// id back in its place.
	surrogate string
	// ignore says the message is answered by nothing: a notification the server does not take, or a
	// response (the server sends no requests).
	ignore bool
	// method is the request's or notification's method.
	method string
}

// checkMessage checks one JSON-RPC message. An error comes with the id to answer it with (the message's, or
// null when that could not be read); a notification the server would refuse is ignored, as JSON-RPC says.
func checkMessage(data []byte) (*checked, json.RawMessage, *rpcError) {
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		return nil, jsonNull, &rpcError{jsonrpc.CodeParseError, "parse error: the message is not JSON"}
	}
	if len(data) > 0 && data[0] == '[' {
		return nil, jsonNull, &rpcError{jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported (MCP 2025-06-18 removed them): send one message at a time"}
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil || members == nil {
		return nil, jsonNull, &rpcError{jsonrpc.CodeInvalidRequest, "invalid request: a message is a JSON object"}
	}
	msg := &checked{}
	rawID, hasID := members["id"]
	answerID := jsonNull
	if hasID {
		if !validID(rawID) {
			return nil, jsonNull, &rpcError{jsonrpc.CodeInvalidRequest, "invalid request: an id is a string or an integer from -2^63 to 2^63-1"}
		}
		msg.id, answerID = rawID, rawID
	}
	if v := members["jsonrpc"]; !bytes.Equal(v, []byte(`"2.0"`)) {
		return nil, answerID, &rpcError{jsonrpc.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`}
	}
	rawMethod, hasMethod := members["method"]
	if !hasMethod {
		// A response: fine only with an id and one of result and error; the server asked nothing, so it
		// answers nothing.
		_, result := members["result"]
		_, failure := members["error"]
		if hasID && result != failure {
			return &checked{ignore: true}, nil, nil
		}
		return nil, answerID, &rpcError{jsonrpc.CodeInvalidRequest, `invalid request: a request has a "method"; a response an "id" and one of "result" and "error"`}
	}
	var method string
	if err := json.Unmarshal(rawMethod, &method); err != nil {
		return nil, answerID, &rpcError{jsonrpc.CodeInvalidRequest, `invalid request: "method" must be a string`}
	}
	kind, known := serverMethods[method]
	msg.method = method
	params, hasParams := members["params"]
	if hasParams && bytes.Equal(params, jsonNull) {
		delete(members, "params") // null params are no params
		hasParams = false
	}
	if !hasID {
		// A notification: never answered, so one the server would refuse is dropped.
		msg.ignore = !known || !kind.notification || (hasParams && params[0] != '{') || (kind.needsParams && !hasParams)
		if msg.ignore {
			return msg, nil, nil
		}
	} else {
		switch {
		case !known:
			return nil, answerID, &rpcError{jsonrpc.CodeMethodNotFound, fmt.Sprintf("method not found: %q (see %d methods: %v)", method, len(serverMethods), Methods())}
		case kind.notification:
			return nil, answerID, &rpcError{jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: %s is a notification: send it without an id", method)}
		case hasParams && params[0] != '{':
			return nil, answerID, &rpcError{jsonrpc.CodeInvalidParams, fmt.Sprintf("invalid params: the params of %s are a JSON object", method)}
		case kind.needsParams && !hasParams:
			return nil, answerID, &rpcError{jsonrpc.CodeInvalidParams, fmt.Sprintf("invalid params: %s needs params (a JSON object)", method)}
		}
		if !sdkEchoes(rawID) {
			msg.surrogate = surrogateID()
			members["id"], _ = json.Marshal(msg.surrogate)
		}
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // the members as sent, not re-escaped
	if err := enc.Encode(members); err != nil {
		return nil, answerID, &rpcError{jsonrpc.CodeParseError, "parse error: " + err.Error()}
	}
	msg.body = bytes.TrimSuffix(body.Bytes(), []byte("\n"))
	return msg, nil, nil
}

// validID reports whether an id is one MCP allows: a string, or an integer that fits in 64 bits (not null).
func validID(raw json.RawMessage) bool {
	switch {
	case len(raw) > 0 && raw[0] == '"':
		return true
	case integerID.Match(raw):
		_, err := strconv.ParseInt(string(raw), 10, 64)
		return err == nil
	}
	return false
}

// sdkEchoes reports whether the SDK answers an id with the same bytes: it reads a number as a float64 (so
// integers past 2^53 lose digits) and writes strings in its own escaping.
func sdkEchoes(raw json.RawMessage) bool {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		return false
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(id.Raw()); err != nil {
		return false
	}
	return bytes.Equal(bytes.TrimSuffix(b.Bytes(), []byte("\n")), raw)
}

// surrogatePrefix starts every surrogate id.
const surrogatePrefix = "gem-id-"

// surrogateID is a fresh string id no client could have chosen.
func surrogateID() string { return surrogatePrefix + rand.Text() }

// errorAnswer is the JSON-RPC answer to a message refused by checkMessage.
func errorAnswer(id json.RawMessage, e *rpcError) []byte {
	if id == nil {
		id = jsonNull
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{e.code, e.message}})
	return b
}

// restoreID puts a message's own id back where the SDK's answer carries its surrogate.
func restoreID(data []byte, surrogate string, id json.RawMessage) []byte {
	if surrogate == "" {
		return data
	}
	return bytes.ReplaceAll(data, []byte(strconv.Quote(surrogate)), id)
}
