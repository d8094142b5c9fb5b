package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	ospack "github.com/gemhq/gem/packs/os"
)

// scriptedLLM is the chaos run's LLM: one local server speaking both providers' wire formats (OpenAI chat
// completions at /v1/chat/completions, Anthropic messages at /v1/messages, streamed when asked, as the
// brains ask), answering each request from a script chosen by the conversation it is sent, so any brain that
// asks for a step gets the same answer.
//
// A chat turn's message carries its tag ([chaos s07 t03]); a request's step is the number of assistant
// answers after that message. The step's identity is tag/step: the fake counts the requests for each, when
// they came, and the turn's transcript (its messages, as the fake last saw them, and its answers).
type scriptedLLM struct {
	srv *http.Server
	url string
	key string
	// script answers a step (chaosScript unless set before the first request).
	script func(tag string, step int) (string, []scriptedCall, time.Duration)
	// held is told of each request at /held/v1/chat/completions for a step after the first, which is
	// never answered: it is held until its client goes away (a brain killed while it waits, make bench).
	held chan struct{}
	// hold, when set, is called with each request's turn and step before the request is answered: a test
	// holds an answer there until it lets it go.
	hold func(tag string, step int)

	mu    sync.Mutex
	steps map[string]*scriptedStep // tag/step → what was asked
	turns map[string]*scriptedTurn // tag → its transcript
	bad   []string                 // requests the fake could not read
}

// scriptedStep is one LLM step of a turn as the fake saw it.
type scriptedStep struct {
	tag      string
	step     int
	provider string
	asked    []time.Time // every request for the step
	calls    []scriptedCall
}

// scriptedTurn is what the fake knows of one chat turn.
type scriptedTurn struct {
	provider   string
	transcript int // bytes of the turn's messages (neutral JSON) in its latest request, and of the answer to it
	latest     int // the step of that request
}

// scriptedCall is a tool call the script asks for; tag is unique to the call and is in its input, so the
// calls (and their effects) of each requested call can be counted in the database.
type scriptedCall struct {
	id, tool, tag string
	args          map[string]any
}

// neutralMessage is a message of either wire format; its JSON is what the transcript counts.
type neutralMessage struct {
	Role      string        `json:"role"`
	Content   string        `json:"content,omitempty"`
	ToolCalls []neutralCall `json:"tool_calls,omitempty"`
	CallID    string        `json:"tool_call_id,omitempty"`
}

type neutralCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

var chaosTag = regexp.MustCompile(`\[chaos s\d+ t\d+\]`)

func startScriptedLLM(key string) (*scriptedLLM, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &scriptedLLM{url: "http://" + ln.Addr().String(), key: key, steps: map[string]*scriptedStep{}, turns: map[string]*scriptedTurn{},
		script: chaosScript, held: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", f.openAI)
	mux.HandleFunc("POST /held/v1/chat/completions", f.openAI)
	mux.HandleFunc("POST /v1/messages", f.anthropic)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *scriptedLLM) close() { _ = f.srv.Close() }

// baseURL is what a brain of provider is given as GEM_LLM_BASE_URL.
func (f *scriptedLLM) baseURL(provider string) string {
	if provider == "openai" {
		return f.url + "/v1"
	}
	return f.url
}

// chaosScript is the answer to step of the turn tagged tag: 0–2 steps of 1–4 tool calls (a task and a note
// per call, none-mode; a lead, keyed by a phone shared between turns), then text. A third of the answers
// are slow (200–600 ms). Everything is drawn from the tag, so every request for a step gets one answer.
func chaosScript(tag string, step int) (text string, calls []scriptedCall, delay time.Duration) {
	sum := sha256.Sum256([]byte(tag))
	seed := binary.LittleEndian.Uint64(sum[:8])
	rng := rand.New(rand.NewPCG(seed, uint64(step)))
	toolSteps := []int{0, 1, 1, 2}[rand.New(rand.NewPCG(seed, 99)).IntN(4)]
	if rng.IntN(3) == 0 {
		delay = time.Duration(200+rng.IntN(400)) * time.Millisecond
	}
	if step >= toolSteps {
		return fmt.Sprintf("Done %s: the tasks, notes and leads you asked for are recorded; %d steps of tools were needed. Anything else?", tag, toolSteps), nil, delay
	}
	n := 1 + rng.IntN(4)
	for k := range n {
		callTag := fmt.Sprintf("%s s%d c%d", tag, step, k)
		h := sha256.Sum256([]byte(callTag))
		id := "call_" + hex.EncodeToString(h[:10])
		c := scriptedCall{id: id, tag: callTag}
		switch rng.IntN(3) {
		case 0:
			c.tool, c.args = ospack.CreateTask, map[string]any{"title": "chaos task " + callTag, "domain": "business", "priority": "normal",
				"description": "Ring the customer back about the roof inspection and confirm the date.", "due_at": nil, "context_ref": nil}
		case 1:
			c.tool, c.args = ospack.CreateNote, map[string]any{"title": "chaos note", "domain": "business", "content": "chaos note " + callTag +
				": the customer asked for a quote on the gutters as well.", "entity_refs": nil, "tags": nil}
		default:
			phone := rng.IntN(40) // shared between turns and sessions: the key's effect happens once
			c.tool, c.args = businesspack.CreateLead, map[string]any{"name": "Chaos Lead " + callTag, "phone": fmt.Sprintf("0477%06d", phone),
				"email": nil, "suburb": "Newtown", "source": "referral", "notes": nil}
		}
		calls = append(calls, c)
	}
	return "", calls, delay
}

// functionName is how a brain names a registry tool to an LLM.
func functionName(tool string) string {
	out := []byte{}
	for i := 0; i < len(tool); i++ {
		if tool[i] == '.' {
			out = append(out, '_', '_')
		} else {
			out = append(out, tool[i])
		}
	}
	return string(out)
}

// answer reads a request's conversation (neutral), records it and returns the scripted answer.
func (f *scriptedLLM) answer(provider string, msgs []neutralMessage) (text string, calls []scriptedCall, delay time.Duration, step int, ok bool) {
	// The turn's message is the last user message with a tag; the step counts the answers after it.
	at := -1
	tag := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			if t := chaosTag.FindString(msgs[i].Content); t != "" {
				at, tag = i, t
				break
			}
		}
	}
	if at < 0 {
		f.mu.Lock()
		f.bad = append(f.bad, fmt.Sprintf("%s request without a chaos tag (%d messages)", provider, len(msgs)))
		f.mu.Unlock()
		return "", nil, 0, 0, false
	}
	for _, m := range msgs[at+1:] {
		if m.Role == "assistant" {
			step++
		}
	}
	if f.hold != nil {
		f.hold(tag, step)
	}
	text, calls, delay = f.script(tag, step)
	size := 0
	for _, m := range msgs[at:] {
		b, _ := json.Marshal(m)
		size += len(b)
	}
	answer := neutralMessage{Role: "assistant", Content: text}
	for _, c := range calls {
		args, _ := json.Marshal(c.args)
		answer.ToolCalls = append(answer.ToolCalls, neutralCall{ID: c.id, Name: functionName(c.tool), Arguments: string(args)})
	}
	b, _ := json.Marshal(answer)
	size += len(b)

	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprintf("%s/%d", tag, step)
	s := f.steps[id]
	if s == nil {
		s = &scriptedStep{tag: tag, step: step, provider: provider, calls: calls}
		f.steps[id] = s
	}
	s.asked = append(s.asked, time.Now())
	t := f.turns[tag]
	if t == nil {
		t = &scriptedTurn{provider: provider}
		f.turns[tag] = t
	}
	if step >= t.latest {
		t.latest, t.transcript = step, size
	}
	return text, calls, delay, step, true
}

func (f *scriptedLLM) openAI(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
	}
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		fail(http.StatusUnauthorized, "Incorrect API key provided.")
		return
	}
	var body struct {
		streamWish
		Model    string `json:"model"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	var msgs []neutralMessage
	for _, m := range body.Messages {
		if m.Role == "system" || m.Role == "developer" {
			continue
		}
		n := neutralMessage{Role: m.Role, Content: contentText(m.Content), CallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			n.ToolCalls = append(n.ToolCalls, neutralCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		msgs = append(msgs, n)
	}
	text, calls, delay, step, ok := f.answer("openai", msgs)
	if !ok {
		fail(http.StatusBadRequest, "the chaos fake needs a tagged user message")
		return
	}
	if step > 0 && strings.HasPrefix(r.URL.Path, "/held/") {
		select {
		case f.held <- struct{}{}:
		default:
		}
		<-r.Context().Done()
		return
	}
	if body.Stream {
		usage := map[string]any{"prompt_tokens": 200, "completion_tokens": 40, "total_tokens": 240}
		if !body.StreamOptions.IncludeUsage {
			usage = nil
		}
		pieces, gap := chaosPieces(text, delay)
		streamOpenAIAnswer(w, "chatcmpl-chaos", body.Model, pieces, gap, chaosCalls(calls), usage)
		return
	}
	time.Sleep(delay)
	message := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	finish := "stop"
	if len(calls) == 0 {
		message["content"] = text
	} else {
		var tcs []any
		for _, c := range calls {
			args, _ := json.Marshal(c.args)
			tcs = append(tcs, map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": functionName(c.tool), "arguments": string(args)}})
		}
		message["tool_calls"], finish = tcs, "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-chaos", "object": "chat.completion", "created": time.Now().Unix(), "model": body.Model,
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]any{"prompt_tokens": 200, "completion_tokens": 40, "total_tokens": 240},
	})
}

func (f *scriptedLLM) anthropic(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, typ, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	}
	if r.Header.Get("X-Api-Key") != f.key {
		fail(http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		fail(http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	var body struct {
		streamWish
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		fail(http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	var msgs []neutralMessage
	for i, m := range body.Messages {
		if i > 0 && m.Role == body.Messages[i-1].Role {
			fail(http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d: roles must alternate between user and assistant", i))
			return
		}
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			msgs = append(msgs, neutralMessage{Role: m.Role, Content: s})
			continue
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			fail(http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d.content: %v", i, err))
			return
		}
		assistant := neutralMessage{Role: "assistant"}
		var texts []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				if m.Role == "assistant" {
					assistant.Content += b.Text
				} else {
					texts = append(texts, b.Text)
				}
			case "tool_use":
				assistant.ToolCalls = append(assistant.ToolCalls, neutralCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
			case "tool_result":
				msgs = append(msgs, neutralMessage{Role: "tool", CallID: b.ToolUseID, Content: contentText(b.Content)})
			}
		}
		if m.Role == "assistant" {
			msgs = append(msgs, assistant)
		}
		for _, t := range texts {
			msgs = append(msgs, neutralMessage{Role: "user", Content: t})
		}
	}
	text, calls, delay, _, ok := f.answer("anthropic", msgs)
	if !ok {
		fail(http.StatusBadRequest, "invalid_request_error", "the chaos fake needs a tagged user message")
		return
	}
	if body.Stream {
		pieces, gap := chaosPieces(text, delay)
		streamAnthropicAnswer(w, "msg_chaos", body.Model, pieces, gap, chaosCalls(calls), 200, 40)
		return
	}
	time.Sleep(delay)
	var content []any
	stop := "end_turn"
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	for _, c := range calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.id, "name": functionName(c.tool), "input": c.args})
		stop = "tool_use"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "msg_chaos", "type": "message", "role": "assistant", "model": body.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 200, "output_tokens": 40},
	})
}

// chaosPieces streams a slow answer's text as a model writes it: half its delay before the first piece, the
// rest spread between its four pieces (an answer with calls, all of its delay first).
func chaosPieces(text string, delay time.Duration) ([]string, time.Duration) {
	pieces := textPieces(text, 4)
	if len(pieces) < 2 {
		time.Sleep(delay)
		return pieces, 0
	}
	time.Sleep(delay / 2)
	return pieces, delay / 2 / time.Duration(len(pieces)-1)
}

// chaosCalls are a step's calls as a fake streams them.
func chaosCalls(calls []scriptedCall) []streamedCall {
	var out []streamedCall
	for _, c := range calls {
		args, _ := json.Marshal(c.args)
		out = append(out, streamedCall{ID: c.id, Name: functionName(c.tool), Arguments: string(args)})
	}
	return out
}

// contentText is a message's text: a string, or the text of its parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	out := ""
	for _, p := range parts {
		out += p.Text
	}
	return out
}
