package run

import (
	"bytes"
	"encoding/json"
	"time"
)

// When says a time for people, in the brain's zone ("Fri 4 Dec 15:00").
type When func(time.Time) string

// A Sentence is how the answer speaks of one tool's succeeded call: what was done, from the call's input
// and result, and what a person might do next. Packs give their tools' sentences (Says); a tool without one
// gets a generic sentence from its receipt's summary.
type Sentence struct {
	say  func(in, out json.RawMessage, when When) (string, bool)
	next func(in, out json.RawMessage, has func(tool string) bool) []string
}

// Says makes a tool's Sentence from its typed input and result: say writes the sentence, and next (when not
// nil) suggests what to do next, offering only tools the registry has (has). A result that is not an
// object of Out, or an input that is not one of In, gets the generic sentence: the executor's typed
// handlers write integers as integers and times in RFC 3339, and a value written another way (150000.0, a
// lower-case t) does not decode.
func Says[In, Out any](say func(in In, out Out, when When) string, next func(in In, out Out, has func(tool string) bool) []string) Sentence {
	decode := func(rawIn, rawOut json.RawMessage) (in In, out Out, ok bool) {
		if len(rawIn) > 0 && json.Unmarshal(rawIn, &in) != nil {
			return in, out, false
		}
		// A result is an object: null, an array or a scalar decodes into a struct as nothing, and must not be
		// read as an empty result. One look at the first byte instead of decoding it twice.
		if trimmed := bytes.TrimLeft(rawOut, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(rawOut, &out) != nil {
			return in, out, false
		}
		return in, out, true
	}
	s := Sentence{say: func(rawIn, rawOut json.RawMessage, when When) (string, bool) {
		in, out, ok := decode(rawIn, rawOut)
		if !ok {
			return "", false
		}
		return say(in, out, when), true
	}}
	if next != nil {
		s.next = func(rawIn, rawOut json.RawMessage, has func(string) bool) []string {
			in, out, ok := decode(rawIn, rawOut)
			if !ok {
				return nil
			}
			return next(in, out, has)
		}
	}
	return s
}

// Say is the sentence for a call with this input and result; false when the sentence cannot read them
// (the answer then says the generic sentence).
func (s Sentence) Say(in, out json.RawMessage, when When) (string, bool) {
	if s.say == nil {
		return "", false
	}
	return s.say(in, out, when)
}

// Next suggests what a person might do after the call, offering only tools the registry has (has).
func (s Sentence) Next(in, out json.RawMessage, has func(tool string) bool) []string {
	if s.next == nil {
		return nil
	}
	return s.next(in, out, has)
}

// Sentences are the tools' sentences, by tool name.
type Sentences map[string]Sentence

// UseSentences gives the service the packs' sentences (packs/plans); without them every answer is the
// generic one.
func (s *Service) UseSentences(sentences Sentences) { s.sentences = sentences }
