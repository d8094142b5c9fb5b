package executor_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/remote"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// scriptTools are script tools added to the test registry: they call its tools, catch their errors, throw,
// and run too long.
var scriptTools = []string{
	`{"name": "lab.note_pair", "description": "Writes two notes through os.create_note.",
	  "input_schema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"], "additionalProperties": false},
	  "output_schema": {"type": "object", "required": ["first", "second"]},
	  "permissions": ["write:db"], "idempotency": {"mode": "none"}, "timeout_ms": 10000,
	  "implementation": {"type": "script", "calls": ["os.create_note"], "source":
	    "function main(input) {\n  const a = gem.os.create_note({domain: 'business', title: input.title + ' 1', content: 'one'});\n  const b = gem.os.create_note({domain: 'business', title: input.title + ' 2', content: 'two'});\n  console.log('wrote', a.note_id, b.note_id);\n  return {first: a.note_id, second: b.note_id};\n}"}}`,
	`{"name": "lab.complete_or_say", "description": "Completes a task, or says why it could not.",
	  "input_schema": {"type": "object", "properties": {"task_id": {"type": "string"}}, "required": ["task_id"]},
	  "output_schema": {"type": "object", "required": ["completed"]},
	  "permissions": ["write:db"], "idempotency": {"mode": "safe-retry"}, "timeout_ms": 10000,
	  "implementation": {"type": "script", "calls": ["os.complete_task"], "source":
	    "function main(input) {\n  try {\n    gem.os.complete_task({task_id: input.task_id});\n    return {completed: true};\n  } catch (e) {\n    return {completed: false, code: e.code, call: e.call_id};\n  }\n}"}}`,
	`{"name": "lab.complete_blindly", "description": "Completes a task and does not look at errors.",
	  "input_schema": {"type": "object"}, "output_schema": {"type": "object"},
	  "permissions": ["write:db"], "idempotency": {"mode": "safe-retry"}, "timeout_ms": 10000,
	  "implementation": {"type": "script", "calls": ["os.complete_task"], "source":
	    "function main(input) {\n  console.log('completing');\n  gem.os.complete_task({task_id: input.task_id});\n  return {};\n}"}}`,
	`{"name": "lab.loops", "description": "Never ends.",
	  "input_schema": {"type": "object"}, "output_schema": {"type": "object"},
	  "permissions": [], "idempotency": {"mode": "safe-retry"}, "timeout_ms": 300,
	  "implementation": {"type": "script", "source": "function main() { for (;;) {} }"}}`,
}

func TestScriptTools(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	data, err := os.ReadFile(b.regPath)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	tools := doc["tools"].([]any)
	for _, s := range scriptTools {
		var v any
		require.NoError(t, json.Unmarshal([]byte(s), &v))
		tools = append(tools, v)
	}
	doc["tools"] = tools
	data, err = json.Marshal(doc)
	require.NoError(t, err)
	reg, err := registry.Parse(data)
	require.NoError(t, err)
	h := testHandlers(b.outsideLog, b.business)
	closeRemote, err := remote.Register(ctx, reg, h, remote.Options{})
	require.NoError(t, err)
	t.Cleanup(closeRemote)
	require.True(t, h["lab.note_pair"].Isolated)
	b.startExecutorWith(t, executor.Config{}, reg, h, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))

	// A script calls tools: each call has its own receipt, made for the script's call, and listed in the
	// script's effects.
	id := b.call(t, ctx, "lab.note_pair", `{"title": "pair"}`)
	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	var out struct{ First, Second string }
	require.NoError(t, json.Unmarshal(r.Result, &out))
	require.NotEqual(t, out.First, out.Second)
	require.Len(t, r.Effects.Outside, 2)
	for _, e := range r.Effects.Outside {
		require.Equal(t, "call", e.Kind)
		require.Equal(t, "os.create_note", e.Target)
		child := uuid.MustParse(e.Reference)
		require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM core_tool_calls c JOIN core_tool_receipts r ON r.call_id = c.id
			WHERE c.id = $1 AND c.parent_id = $2 AND c.requested_by = (SELECT requested_by FROM core_tool_calls WHERE id = $2)
			AND r.status = 'succeeded'`, child, id))
	}
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM os_notes WHERE title IN ('pair 1', 'pair 2')`))

	// A tool's failure is an exception the script may catch.
	id = b.call(t, ctx, "lab.complete_or_say", `{"task_id": "`+uuid.NewString()+`"}`)
	r = b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	var said struct {
		Completed bool
		Code      string
		Call      string
	}
	require.NoError(t, json.Unmarshal(r.Result, &said))
	require.False(t, said.Completed)
	require.Equal(t, "not_found", said.Code)
	require.Equal(t, r.Effects.Outside[0].Reference, said.Call)

	// Not caught, it fails the script's call, with the line, the output and the calls in the details.
	id = b.call(t, ctx, "lab.complete_blindly", `{"task_id": "`+uuid.NewString()+`"}`)
	r = b.waitOne(t, ctx, id)
	require.Equal(t, registry.CodeScriptError, r.Error.Code)
	require.Contains(t, r.Error.Message, "not_found")
	d := decodeDetails(t, r)
	require.Equal(t, "script_error", d["script_code"])
	require.EqualValues(t, 3, d["line"])
	require.Equal(t, []any{"completing"}, d["output"])
	require.Len(t, d["calls"], 1)

	// A script past its tool's timeout is stopped, and the call ends timeout like any handler that overruns.
	start := time.Now()
	id = b.call(t, ctx, "lab.loops", `{}`)
	r = b.waitOne(t, ctx, id)
	require.Equal(t, registry.CodeTimeout, r.Error.Code, r.Error.Message)
	require.Less(t, time.Since(start), 10*time.Second)
}
