package registry

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Secret inputs (docs/governance.md#secrets): an input property whose schema says "writeOnly": true or
// "x-gem-secret": true reaches the handler in clear but is stored sealed — AES-256-GCM under the key of
// GEM_SECRET_KEY, in an envelope {"$gem_secret": "v1:<key id>:<base64 nonce and ciphertext>"} — and is shown
// redacted wherever a call's input is shown.

// SecretEnvelopeField is the one field of a sealed value's envelope.
const SecretEnvelopeField = "$gem_secret"

// SecretRedacted replaces a secret where an input is shown.
const SecretRedacted = "[secret]"

// secretPathMaxDepth bounds how deep the schema walk looks for secret properties.
const secretPathMaxDepth = 8

// SecretPaths are the paths of the tool's secret input properties: property names, "*" for every element
// of an array. Nil: the tool has none. The paths are the caller's own.
func (t *Tool) SecretPaths() [][]string {
	if t.secretPaths == nil {
		return nil
	}
	out := make([][]string, len(t.secretPaths))
	for i, p := range t.secretPaths {
		out[i] = slices.Clone(p)
	}
	return out
}

// HasSecrets reports whether any input property of the tool is secret.
func (t *Tool) HasSecrets() bool { return len(t.secretPaths) > 0 }

// secretPaths walks an input schema's properties and items for secret properties.
func secretPaths(schema json.RawMessage) [][]string {
	var out [][]string
	var walk func(raw json.RawMessage, path []string, depth int)
	walk = func(raw json.RawMessage, path []string, depth int) {
		if depth > secretPathMaxDepth {
			return
		}
		var s struct {
			WriteOnly  bool                       `json:"writeOnly"`
			Secret     bool                       `json:"x-gem-secret"`
			Properties map[string]json.RawMessage `json:"properties"`
			Items      json.RawMessage            `json:"items"`
		}
		if json.Unmarshal(raw, &s) != nil {
			return
		}
		if (s.WriteOnly || s.Secret) && len(path) > 0 {
			out = append(out, append([]string(nil), path...))
			return // everything under a secret is secret
		}
		for name, p := range s.Properties {
			walk(p, append(path, name), depth+1)
		}
		if len(s.Items) > 0 && s.Items[0] == '{' {
			walk(s.Items, append(path, "*"), depth+1)
		}
	}
	walk(schema, nil, 0)
	return out
}

// checkSecrets finds the tool's secret properties and refuses what would store one in clear: a secret
// idempotency key (kept in core_idempotency_keys) or limit key (kept in core_limit_rates).
func (c *checker) checkSecrets(label string, t *Tool) {
	t.secretPaths = secretPaths(t.InputSchema)
	top := map[string]bool{}
	for _, p := range t.secretPaths {
		if len(p) == 1 {
			top[p[0]] = true
		}
	}
	if kf := t.Idempotency.KeyField; kf != "" && top[kf] {
		c.add(label, "idempotency.key_field", fmt.Sprintf("names %q, a secret property; its key would be stored in clear", kf))
	}
	for field, p := range t.limitKeyProperties() {
		if top[p] {
			c.add(label, field, fmt.Sprintf("names %q, a secret property; its value would be stored in clear", p))
		}
	}
}

// SetSecrets gives the registry the key its process seals and opens secret inputs with (GEM_SECRET_KEY).
// Set it once, before the registry is shared.
func (r *Registry) SetSecrets(s *Secrets) { r.secrets = s }

// SealInput seals the secret properties of a call's input to the named tool, as it must be stored. An
// unknown tool, or one without secrets, gets its input back as it is.
func (r *Registry) SealInput(tool string, input []byte) ([]byte, error) {
	t, ok := r.Tool(tool)
	if !ok || !t.HasSecrets() {
		return input, nil
	}
	return r.secrets.Seal(t, input)
}

// OpenInput gives the clear values of a stored input's secret properties (for a device about to run it).
func (r *Registry) OpenInput(tool string, input []byte) ([]byte, error) {
	t, ok := r.Tool(tool)
	if !ok || !t.HasSecrets() {
		return input, nil
	}
	clear, _, err := r.secrets.Open(t, input)
	return clear, err
}

// HasSealed reports whether a call's input to the named tool holds a sealed value at a secret property.
// Clients send secrets in clear: a sealed one in a request was copied from a stored call, and would be
// opened for another caller.
func (r *Registry) HasSealed(tool string, input []byte) bool {
	t, ok := r.Tool(tool)
	if !ok || !t.HasSecrets() {
		return false
	}
	found := false
	_, _, _ = (*Secrets)(nil).transform(t, input, func(_ []string, v any) (any, bool, error) {
		found = found || isEnvelope(v)
		return v, false, nil
	})
	return found
}

// RedactInput hides the secret properties of an input to the named tool, sealed or clear, for a record
// (an LLM's transcript) or a view.
func (r *Registry) RedactInput(tool string, input []byte) []byte {
	t, ok := r.Tool(tool)
	if !ok || !t.HasSecrets() {
		return input
	}
	return Redact(t, input)
}

// Secrets seals and opens secret inputs with a key, and opens those sealed with earlier keys.
type Secrets struct {
	keyID string
	aead  cipher.AEAD
	// byID opens values sealed with this key or a previous one.
	byID map[string]cipher.AEAD
}

// ParseSecretKey reads a 256-bit key written as 64 hexadecimal digits or as base64 (standard or URL
// alphabet, padded or not).
func ParseSecretKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, errors.New("a secret key is 32 random bytes, written as 64 hexadecimal digits or in base64 (openssl rand -base64 32)")
}

// NewSecrets makes a Secrets that seals with key and opens values sealed with key or any of previous
// (keys being rotated out). Keys are as ParseSecretKey reads them.
func NewSecrets(key string, previous ...string) (*Secrets, error) {
	s := &Secrets{byID: map[string]cipher.AEAD{}}
	for i, k := range append([]string{key}, previous...) {
		if strings.TrimSpace(k) == "" && i > 0 {
			continue
		}
		raw, err := ParseSecretKey(k)
		if err != nil {
			return nil, err
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(raw)
		id := hex.EncodeToString(sum[:4])
		if i == 0 {
			s.keyID, s.aead = id, aead
		}
		s.byID[id] = aead
	}
	return s, nil
}

// KeyID names the sealing key (the first 8 hex digits of its SHA-256), as envelopes carry it.
func (s *Secrets) KeyID() string { return s.keyID }

// ErrNoSecretKey is returned when a secret input must be sealed and no key is configured.
var ErrNoSecretKey = errors.New("GEM_SECRET_KEY is not set, so a secret input cannot be stored: set it to 32 random bytes (openssl rand -base64 32), the same for the brain and every executor")

// NoSecretKeyDetails are the not_configured details of a call refused for ErrNoSecretKey, wherever it is
// refused (the brain before storing it, the executor before running it).
func NoSecretKeyDetails() NotConfiguredDetails {
	return NotConfiguredDetails{Reason: ErrNoSecretKey.Error(), RequiredEnv: []string{"GEM_SECRET_KEY"},
		NextSteps: []string{"Set GEM_SECRET_KEY for the brain and every executor, then make the call again."}}
}

// SecretError says a sealed value could not be opened: sealed with a key this process does not have, or
// altered.
type SecretError struct {
	Path []string
	Err  error
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("the secret input %s cannot be opened: %v", "/"+strings.Join(e.Path, "/"), e.Err)
}

// Seal replaces the clear values of the tool's secret properties in input by envelopes. It returns input
// itself when the tool has no secrets or nothing needed sealing. s may be nil: then an input with a clear
// secret is refused with ErrNoSecretKey.
func (s *Secrets) Seal(t *Tool, input []byte) ([]byte, error) {
	out, _, err := s.transform(t, input, func(path []string, v any) (any, bool, error) {
		if isEnvelope(v) {
			return v, false, nil
		}
		if s == nil {
			return nil, false, ErrNoSecretKey
		}
		plain, err := json.Marshal(v)
		if err != nil {
			return nil, false, err
		}
		nonce := make([]byte, s.aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, false, err
		}
		sealed := s.aead.Seal(nonce, nonce, plain, secretAAD(t.Name, path))
		return map[string]any{SecretEnvelopeField: "v1:" + s.keyID + ":" + base64.RawStdEncoding.EncodeToString(sealed)}, true, nil
	})
	return out, err
}

// Open replaces the envelopes in input by the clear values, for the handler. sealed reports whether input
// held a clear secret (a call inserted with plain SQL), which the caller should seal in storage.
func (s *Secrets) Open(t *Tool, input []byte) (clear []byte, hadClear bool, err error) {
	return s.transform(t, input, func(path []string, v any) (any, bool, error) {
		if !isEnvelope(v) {
			return v, false, errClearSecret
		}
		if s == nil {
			return nil, false, &SecretError{Path: path, Err: ErrNoSecretKey}
		}
		text := v.(map[string]any)[SecretEnvelopeField].(string)
		parts := strings.SplitN(text, ":", 3)
		if len(parts) != 3 || parts[0] != "v1" {
			return nil, false, &SecretError{Path: path, Err: fmt.Errorf("not a v1 envelope")}
		}
		aead, ok := s.byID[parts[1]]
		if !ok {
			return nil, false, &SecretError{Path: path, Err: fmt.Errorf("sealed with key %s, which is neither GEM_SECRET_KEY nor one of GEM_SECRET_KEY_PREVIOUS", parts[1])}
		}
		sealed, err := base64.RawStdEncoding.DecodeString(parts[2])
		if err != nil || len(sealed) < aead.NonceSize() {
			return nil, false, &SecretError{Path: path, Err: fmt.Errorf("its ciphertext is malformed")}
		}
		plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], secretAAD(t.Name, path))
		if err != nil {
			return nil, false, &SecretError{Path: path, Err: fmt.Errorf("it was altered, or sealed for another tool or property")}
		}
		clear, err := DecodeJSON(plain)
		if err != nil {
			return nil, false, &SecretError{Path: path, Err: err}
		}
		return clear, true, nil
	})
}

// errClearSecret marks a clear value met by Open: it is kept, and reported.
var errClearSecret = errors.New("clear secret")

// Redact replaces the values of the tool's secret properties in input, sealed or clear, by SecretRedacted.
func Redact(t *Tool, input []byte) []byte {
	out, _, err := (*Secrets)(nil).transform(t, input, func([]string, any) (any, bool, error) { return SecretRedacted, true, nil })
	if err != nil {
		return input // not a JSON object: nothing the tool's paths can name
	}
	return out
}

// SecretValues returns the clear values of the tool's secret properties in input, as text (a string's
// characters, other values' JSON), so a record that may quote them (an LLM's program) can be scrubbed.
func SecretValues(t *Tool, input []byte) []string {
	var out []string
	_, _, _ = (*Secrets)(nil).transform(t, input, func(_ []string, v any) (any, bool, error) {
		if isEnvelope(v) {
			return v, false, nil
		}
		if s, ok := v.(string); ok {
			out = append(out, s)
		} else if b, err := json.Marshal(v); err == nil {
			out = append(out, string(b))
		}
		return v, false, nil
	})
	return out
}

// RedactViolations hides what a violation's message may quote of a secret value (a format check quotes it).
func RedactViolations(t *Tool, violations []Violation) {
	for i, v := range violations {
		if t.secretPointer(v.Path) {
			violations[i].Message = "the secret value does not satisfy its schema (" + v.Keyword + ")"
		}
	}
}

// secretPointer reports whether a JSON pointer into the input is a secret property or lies under one.
func (t *Tool) secretPointer(pointer string) bool {
	if pointer == "" || len(t.secretPaths) == 0 {
		return false
	}
	segs := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
next:
	for _, p := range t.secretPaths {
		if len(segs) < len(p) {
			continue
		}
		for i, name := range p {
			if name != "*" && name != segs[i] {
				continue next
			}
		}
		return true
	}
	return false
}

// transform applies fn to the value at each of the tool's secret paths present in input. fn returns the
// new value and whether it changed; an error stops it, except errClearSecret, which is noted in the second
// result.
func (s *Secrets) transform(t *Tool, input []byte, fn func(path []string, v any) (any, bool, error)) ([]byte, bool, error) {
	if len(t.secretPaths) == 0 {
		return input, false, nil
	}
	doc, err := DecodeJSON(input)
	if err != nil {
		return nil, false, err
	}
	changed, sawClear := false, false
	var visit func(node any, path []string, at []string) (any, error)
	visit = func(node any, path []string, at []string) (any, error) {
		if len(path) == 0 {
			v, ch, err := fn(at, node)
			if errors.Is(err, errClearSecret) {
				sawClear = true
				return node, nil
			}
			if err != nil {
				return nil, err
			}
			changed = changed || ch
			return v, nil
		}
		switch n := node.(type) {
		case map[string]any:
			if path[0] == "*" {
				return node, nil
			}
			child, ok := n[path[0]]
			if !ok {
				return node, nil
			}
			v, err := visit(child, path[1:], append(at, path[0]))
			if err != nil {
				return nil, err
			}
			n[path[0]] = v
		case []any:
			if path[0] != "*" {
				return node, nil
			}
			for i := range n {
				v, err := visit(n[i], path[1:], append(at, fmt.Sprint(i)))
				if err != nil {
					return nil, err
				}
				n[i] = v
			}
		}
		return node, nil
	}
	for _, p := range t.secretPaths {
		if doc, err = visit(doc, p, nil); err != nil {
			return nil, false, err
		}
	}
	if !changed {
		return input, sawClear, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, false, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), sawClear, nil
}

// secretAAD binds a sealed value to its tool and property: an envelope copied elsewhere does not open.
// Array indexes are left out, so a list's secrets may be reordered.
func secretAAD(tool string, path []string) []byte {
	parts := make([]string, len(path))
	for i, p := range path {
		if _, err := strconv.Atoi(p); err == nil {
			p = "*"
		}
		parts[i] = p
	}
	return []byte(tool + "\x00" + strings.Join(parts, "/"))
}

func isEnvelope(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	_, ok = m[SecretEnvelopeField].(string)
	return ok
}
