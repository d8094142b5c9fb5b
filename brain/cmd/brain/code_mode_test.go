package main

import (
	"context"
	"encoding/json"
	"github.com/gemhq/gem/brain/internal/testenv"
	"net/http"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/stretchr/testify/require"
)

// TestRunCode: an agent with code_mode writes a program that chains calls (one caught failure; a tool its
// skills do not enable is no function of the program), each a call of its own with its receipt; the program is recorded on the run;
// a program that does not compile says where. An agent without code_mode is not offered run_code.
func TestRunCode(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	tasks := uniq("tasks")
	var body importBody
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": tasks, "name": tasks,
		"instructions": "Keep the task list.", "tools": []string{"os.create_task", "os.complete_task"}}, &body))
	coder, plain := uniq("coder"), uniq("plain")
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{"slug": coder, "name": "Coder", "code_mode": true}, &body))
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{"slug": plain, "name": "Plain"}, &body))
	for _, ag := range []string{coder, plain} {
		require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+ag+"/skills/"+tasks, nil, &body))
	}

	program := `
const t = gem.os.create_task({domain: "business", title: "Call Ann about the gutters"});
let missing = null;
try { gem.os.complete_task({task_id: "00000000-0000-4000-8000-000000000000"}); } catch (e) { missing = e.code; }
let refused = null;
try { gem.leads.create({name: "X"}); } catch (e) { refused = e.name; }
console.log("made", t.task_id);
return {task: t.task_id, title: t.title, missing: missing, refused: refused};`
	codeArgs := func(code string) string {
		b, _ := json.Marshal(map[string]string{"code": code})
		return string(b)
	}
	var programResult map[string]any
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				require.Contains(t, req.ToolNames(), "run_code")
			},
			Calls: []llmfake.Call{{ID: "prog", Name: "run_code", Arguments: codeArgs(program)}, {ID: "broken", Name: "run_code", Arguments: codeArgs("const a = 1;\nreturn {a: };")}},
		},
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				results := req.ToolResults()
				programResult = resultOf(t, results["prog"])
				require.Equal(t, "succeeded", programResult["status"], results["prog"].Content)
				broken := resultOf(t, results["broken"])
				require.Equal(t, "failed", broken["status"])
				e := broken["error"].(map[string]any)
				require.Equal(t, "syntax_error", e["code"])
				require.EqualValues(t, 2, e["line"])
			},
			Text: "Done: the task is made.",
		},
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				require.NotContains(t, req.ToolNames(), "run_code", "an agent without code_mode is not offered run_code")
			},
			Text: "Hello.",
		},
	)
	withLLM := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	resp, status := chatWith(t, withLLM, coder, "make a task to call Ann and tidy up", "")
	require.Equal(t, http.StatusOK, status, "%+v", resp)
	require.True(t, resp.OK, "%+v", resp.Errors)
	require.Equal(t, "Done: the task is made.", resp.Reply)

	result := programResult["result"].(map[string]any)
	require.Equal(t, "Call Ann about the gutters", result["title"])
	require.Equal(t, "not_found", result["missing"])
	require.Equal(t, "TypeError", result["refused"], "a tool the agent may not use is no function of the program")
	require.Equal(t, []any{"made " + result["task"].(string)}, programResult["output"])
	calls := programResult["calls"].([]any)
	require.Len(t, calls, 2)
	require.Equal(t, "succeeded", calls[0].(map[string]any)["status"])
	require.Equal(t, "not_found", calls[1].(map[string]any)["error_code"])

	// Each call the program made is a call of the run, for the agent, with its receipt.
	statuses := map[string]string{}
	for _, tc := range resp.ToolCalls {
		statuses[tc.Tool] = tc.Status
	}
	require.Equal(t, "succeeded", statuses["os.create_task"])
	require.Equal(t, "failed", statuses["os.complete_task"])
	require.Equal(t, brain.ChatCallAnswered, statuses["run_code"])
	require.Equal(t, 2, testenv.CountCalls(t, shared.pool, resp.RunID))
	ctx := context.Background()
	var agents []string
	require.NoError(t, shared.pool.QueryRow(ctx, `SELECT array_agg(DISTINCT agent) FROM core_tool_calls WHERE run_id = $1`, resp.RunID).Scan(&agents))
	require.Equal(t, []string{coder}, agents)
	var programs, withCalls, failedPrograms int
	require.NoError(t, shared.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE cardinality(call_ids) = 2), count(*) FILTER (WHERE error ->> 'code' = 'syntax_error')
		FROM brain_run_programs WHERE run_id = $1`, resp.RunID).Scan(&programs, &withCalls, &failedPrograms))
	require.Equal(t, []int{2, 1, 1}, []int{programs, withCalls, failedPrograms})

	resp, status = chatWith(t, withLLM, plain, "hello", "")
	require.Equal(t, http.StatusOK, status, "%+v", resp)
	require.Equal(t, 0, fake.Remaining())
}

// TestRunCodeNUL: a program's call whose input holds a NUL (\u0000, which PostgreSQL cannot store) is refused
// with a validation error naming where it is, which the program may catch, and no call is made; what the
// program printed and returned holding one is recorded repaired (U+FFFD), not lost to a storage error.
func TestRunCodeNUL(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	tasks := uniq("tasks")
	var body importBody
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/skills", map[string]any{"slug": tasks, "name": tasks,
		"instructions": "Keep the task list.", "tools": []string{"os.create_task"}}, &body))
	coder := uniq("coder")
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/agents", map[string]any{"slug": coder, "name": "Coder", "code_mode": true}, &body))
	require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+coder+"/skills/"+tasks, nil, &body))

	program := `
let refused = null, message = null;
try { gem.os.create_task({domain: "business", title: "a\u0000b"}); } catch (e) { refused = e.code; message = e.message; }
console.log("printed\u0000");
return {refused: refused, message: message, text: "x\u0000y"};`
	args, err := json.Marshal(map[string]string{"code": program})
	require.NoError(t, err)
	var programResult map[string]any
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "prog", Name: "run_code", Arguments: string(args)}}},
		llmfake.Turn{
			Check: func(t require.TestingT, req *llmfake.Request) {
				programResult = resultOf(t, req.ToolResults()["prog"])
			},
			Text: "Done.",
		},
	)
	withLLM := llmBrain(t, llmconfig.ProviderOpenAI, fake, chat.Config{})
	resp, status := chatWith(t, withLLM, coder, "make a task", "")
	require.Equal(t, http.StatusOK, status, "%+v", resp)
	require.True(t, resp.OK, "%+v", resp.Errors)

	require.Equal(t, "succeeded", programResult["status"], "%v", programResult)
	result := programResult["result"].(map[string]any)
	require.Equal(t, "validation_error", result["refused"], "%v", result)
	require.Contains(t, result["message"], `/title contains a NUL character (\u0000)`)
	require.Equal(t, 0, testenv.CountCalls(t, shared.pool, resp.RunID), "no call is made")

	var programs int
	var text, printed string
	require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT count(*), coalesce(max(value ->> 'text'), ''), coalesce(max(output ->> 0), '')
		FROM brain_run_programs WHERE run_id = $1`, resp.RunID).Scan(&programs, &text, &printed))
	require.Equal(t, 1, programs, "the program is recorded")
	require.Equal(t, "x\uFFFDy", text)
	require.Equal(t, "printed\uFFFD", printed)
}
