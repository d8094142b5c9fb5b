package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/stretchr/testify/require"
)

// SEP-2663's own examples (its "Example Message Flow", "Error Handling" and "Task Execution Errors"), as the
// SEP writes them: each request is sent as the SEP has it — the tool's name and the taskId GEM's own, the
// _meta's "Other metadata..." filled in with the revision's protocolVersion and clientInfo — and each of
// GEM's answers must have the shape of the SEP's answer: the same members, each of the same JSON type.

// sepCallToolRequest is the SEP's tools/call (hello_world, needing a person's input) with GEM's held tool.
const sepCallToolRequest = `{
  "jsonrpc": "2.0",
  "id": 2,
  "method": "tools/call",
  "params": {
    "name": "os__list_reminders",
    "arguments": {},
    "_meta": {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": {"name": "gem-sep-test", "version": "1"},
      "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {
          "io.modelcontextprotocol/tasks": {}
        }
      }
    }
  }
}`

// sepCreateTaskResult is the SEP's answer to it.
const sepCreateTaskResult = `{
  "jsonrpc": "2.0",
  "id": 2,
  "result": {
    "resultType": "task",
    "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
    "status": "working",
    "createdAt": "2025-11-25T10:30:00Z",
    "lastUpdatedAt": "2025-11-25T10:50:00Z",
    "ttlMs": 3600000,
    "pollIntervalMs": 5000
  }
}`

// sepGetTask is the SEP's tasks/get (ids 3, 4, 5, 7 and 8 of its flow).
const sepGetTask = `{
  "jsonrpc": "2.0",
  "id": 4,
  "method": "tasks/get",
  "params": {
    "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840"
  }
}`

const sepInputRequiredTask = `{
  "id": 4,
  "jsonrpc": "2.0",
  "result": {
    "resultType": "complete",
    "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
    "status": "input_required",
    "createdAt": "2025-11-25T10:30:00Z",
    "lastUpdatedAt": "2025-11-25T10:50:00Z",
    "ttlMs": 3600000,
    "pollIntervalMs": 5000,
    "inputRequests": {
      "name": {
        "method": "elicitation/create",
        "params": {
          "mode": "form",
          "message": "Please enter your name.",
          "requestedSchema": {
            "type": "object",
            "properties": {
              "name": { "type": "string" }
            },
            "required": ["name"]
          }
        }
      }
    }
  }
}`

// sepUpdateTask is the SEP's tasks/update, its answer the form's (GEM's form asks for a decision).
const sepUpdateTask = `{
  "jsonrpc": "2.0",
  "id": 6,
  "method": "tasks/update",
  "params": {
    "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
    "inputResponses": {
      "approval": {
        "action": "accept",
        "content": {
          "approve": true
        }
      }
    }
  }
}`

const sepUpdateTaskResult = `{
  "jsonrpc": "2.0",
  "id": 6,
  "result": {
    "resultType": "complete"
  }
}`

const sepWorkingTask = `{
  "id": 7,
  "jsonrpc": "2.0",
  "result": {
    "resultType": "complete",
    "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
    "status": "working",
    "createdAt": "2025-11-25T10:30:00Z",
    "lastUpdatedAt": "2025-11-25T10:50:00Z",
    "ttlMs": 3600000,
    "pollIntervalMs": 5000
  }
}`

const sepCompletedTask = `{
  "jsonrpc": "2.0",
  "id": 8,
  "result": {
    "resultType": "complete",
    "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
    "status": "completed",
    "createdAt": "2025-11-25T10:30:00Z",
    "lastUpdatedAt": "2025-11-25T10:50:00Z",
    "ttlMs": 3600000,
    "pollIntervalMs": 5000,
    "result": {
      "content": [
        {
          "type": "text",
          "text": "Hello, Luca!"
        }
      ],
      "isError": false
    }
  }
}`

// sepToolErrorTask is the SEP's "Tool call completed with tool error (isError: true)". (The SEP writes its
// resultType "task"; a tasks/get result's is "complete", as the SEP says of GetTaskResult and GEM answers.)
const sepToolErrorTask = `{
  "jsonrpc": "2.0",
  "id": 5,
  "result": {
    "resultType": "task",
    "taskId": "786512e2-9e0d-44bd-8f29-789f820fe840",
    "status": "completed",
    "createdAt": "2025-11-25T10:30:00Z",
    "lastUpdatedAt": "2025-11-25T10:40:00Z",
    "ttlMs": 3600000,
    "result": {
      "content": [
        {
          "type": "text",
          "text": "Failed to process request: invalid input"
        }
      ],
      "isError": true
    }
  }
}`

const sepTaskNotFound = `{
  "jsonrpc": "2.0",
  "id": 70,
  "error": {
    "code": -32602,
    "message": "Failed to retrieve task: Task not found"
  }
}`

const sepMissingCapability = `{
  "jsonrpc": "2.0",
  "id": 1,
  "error": {
    "code": -32021,
    "message": "Missing required client capability",
    "data": {
      "requiredCapabilities": {
        "extensions": {
          "io.modelcontextprotocol/tasks": {}
        }
      }
    }
  }
}`

// sepShape checks that got has every member of the SEP's example, each of the same JSON type (objects
// member by member, arrays by their first element); the loose members (paths) may be null or left out,
// as their schema allows. Members of GEM's own (_meta, statusMessage) may be added.
func sepShape(t *testing.T, example, got any, path string, loose ...string) {
	t.Helper()
	switch e := example.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "%s: an object, not %T (%v)", path, got, got)
		for k, v := range e {
			if g[k] == nil && slices.Contains(loose, path+"/"+k) {
				continue
			}
			require.Contains(t, g, k, "%s: the SEP's member %q", path, k)
			sepShape(t, v, g[k], path+"/"+k, loose...)
		}
	case []any:
		g, ok := got.([]any)
		require.True(t, ok, "%s: an array, not %T", path, got)
		if len(e) > 0 {
			require.NotEmpty(t, g, path)
			sepShape(t, e[0], g[0], path+"/0", loose...)
		}
	default:
		require.IsType(t, example, got, "%s: the SEP's %v (%T), GEM's %v (%T)", path, example, example, got, got)
	}
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	return v
}

// sepMessage is the SEP's request with GEM's taskId, and the _meta every request of the revision carries
// (the SEP leaves it out of its tasks/* examples; a request without the extension declared is refused).
func sepMessage(t *testing.T, p *tasksPeer, example, taskID string) []byte {
	t.Helper()
	msg := decodeJSON(t, strings.ReplaceAll(example, "786512e2-9e0d-44bd-8f29-789f320fe840", taskID))
	msg["params"].(map[string]any)["_meta"] = p.meta()
	return mustJSONRaw(t, msg)
}

// TestMCPTasksSEPExamples runs SEP-2663's example flow against GEM: a call that needs a person's input
// (GEM: approval) answers with a task, tasks/get shows its input request again and again, tasks/update
// answers it and is acknowledged as the SEP's, the task works and completes with the tool's result; a tool
// error completes the task with isError; the SEP's error examples are answered as the SEP writes them.
// Every answer also matches the tasks package's schemas of the extension.
func TestMCPTasksSEPExamples(t *testing.T) {
	t.Parallel()
	m, _, dbURL := taskBrain(t, func(c *Config) { c.MCP.TaskWait, c.MCP.TaskPollInterval = time.Millisecond, 100*time.Millisecond })
	e, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	owner := newTasksPeer(t, m.Server.URL(), taskOwnerToken, true)
	var wire []wireCheck
	resultOf := func(status int, msg rpcMessage) map[string]any {
		t.Helper()
		require.Equal(t, http.StatusOK, status, "%v", msg)
		require.Nil(t, msg["error"], "%s", msg["error"])
		var all map[string]any
		raw, _ := json.Marshal(msg)
		require.NoError(t, json.Unmarshal(raw, &all))
		return all
	}

	// The call: a task (input_required: the SEP's seed is "typically, though not necessarily, working").
	created := resultOf(owner.send([]byte(sepCallToolRequest), "tools/call", "os__list_reminders"))
	sepShape(t, decodeJSON(t, sepCreateTaskResult), created, "", "/result/ttlMs")
	res := created["result"].(map[string]any)
	require.Equal(t, "task", res["resultType"])
	require.Equal(t, "input_required", res["status"])
	require.NotContains(t, res, "inputRequests", "a CreateTaskResult is the Task alone")
	taskID := res["taskId"].(string)
	wire = append(wire, wireCheck{"CreateTaskResultV2Schema", res})

	// Polled twice while no one answered: the same request under the same key both times.
	// The SEP's keys ("name") and form fields are its tool's; GEM's request is "approval", its form a decision.
	inputRequired := decodeJSON(t, sepInputRequiredTask)
	sepRequest := inputRequired["result"].(map[string]any)["inputRequests"].(map[string]any)["name"].(map[string]any)
	delete(inputRequired["result"].(map[string]any), "inputRequests")
	delete(sepRequest["params"].(map[string]any)["requestedSchema"].(map[string]any), "properties")
	var requests []any
	for range 2 {
		got := resultOf(owner.send(sepMessage(t, owner, sepGetTask, taskID), "tasks/get", taskID))
		sepShape(t, inputRequired, got, "", "/result/ttlMs")
		res := got["result"].(map[string]any)
		require.Equal(t, "complete", res["resultType"])
		require.Equal(t, "input_required", res["status"])
		require.Len(t, res["inputRequests"], 1)
		request := res["inputRequests"].(map[string]any)["approval"].(map[string]any)
		sepShape(t, sepRequest, request, "/inputRequests/approval")
		require.Equal(t, "form", request["params"].(map[string]any)["mode"], "the owner may decide: a form")
		require.Contains(t, request["params"].(map[string]any)["requestedSchema"].(map[string]any)["properties"], "approve")
		requests = append(requests, request)
		wire = append(wire, wireCheck{"GetTaskResultV2Schema", res})
	}
	require.Equal(t, requests[0], requests[1])

	// Answered: acknowledged exactly as the SEP's.
	got := resultOf(owner.send(sepMessage(t, owner, sepUpdateTask, taskID), "tasks/update", taskID))
	require.Equal(t, decodeJSON(t, sepUpdateTaskResult)["result"], withoutMeta(got["result"].(map[string]any)))
	wire = append(wire, wireCheck{"UpdateTaskResultV2Schema", got["result"]})

	// Working, then completed with the tool's result.
	var completed map[string]any
	sawWorking := false
	require.Eventually(t, func() bool {
		completed = resultOf(owner.send(sepMessage(t, owner, sepGetTask, taskID), "tasks/get", taskID))
		res := completed["result"].(map[string]any)
		if res["status"] == "working" {
			sawWorking = true
			sepShape(t, decodeJSON(t, sepWorkingTask), completed, "", "/result/ttlMs")
			wire = append(wire, wireCheck{"GetTaskResultV2Schema", res})
		}
		return res["status"] == "completed"
	}, 30*time.Second, 20*time.Millisecond)
	t.Logf("the task was seen working after its update: %v", sawWorking)
	sepShape(t, decodeJSON(t, sepCompletedTask), completed, "", "/result/ttlMs", "/result/result/isError")
	res = completed["result"].(map[string]any)
	require.NotEqual(t, true, res["result"].(map[string]any)["isError"])
	require.Equal(t, "complete", res["result"].(map[string]any)["resultType"])
	wire = append(wire, wireCheck{"GetTaskResultV2Schema", res}, wireCheck{"CallToolResultV2Schema", res["result"]})

	// A tool error: completed, isError, as the tool answers it (never failed, which is for JSON-RPC errors).
	created = resultOf(owner.request("tools/call", map[string]any{"name": "os__complete_task", "arguments": map[string]any{"task_id": "00000000-0000-4000-8000-000000000000"}}))
	failedID := created["result"].(map[string]any)["taskId"].(string)
	failed := owner.waitStatus(failedID, "completed")
	example := decodeJSON(t, sepToolErrorTask)
	example["result"].(map[string]any)["resultType"] = "complete"
	sepShape(t, example["result"], failed, "/result", "/result/ttlMs")
	require.Equal(t, true, failed["result"].(map[string]any)["isError"])
	require.Contains(t, failed["statusMessage"], "os.complete_task failed: not_found")
	wire = append(wire, wireCheck{"GetTaskResultV2Schema", failed}, wireCheck{"CallToolResultV2Schema", failed["result"]})

	// The SEP's error examples.
	_, msg := owner.send(sepMessage(t, owner, sepGetTask, "786512e2-9e0d-44bd-8f29-789f320fe840"), "tasks/get", "786512e2-9e0d-44bd-8f29-789f320fe840")
	require.JSONEq(t, string(mustJSONRaw(t, decodeJSON(t, sepTaskNotFound)["error"])), string(msg["error"]))
	plain := newTasksPeer(t, m.Server.URL(), taskOwnerToken, false)
	e2 := plain.fails("tasks/get", map[string]any{"taskId": taskID})
	sepErr := decodeJSON(t, sepMissingCapability)["error"].(map[string]any)
	require.EqualValues(t, sepErr["code"], e2.Code)
	require.JSONEq(t, string(mustJSONRaw(t, sepErr["data"])), string(e2.Data))
	require.True(t, strings.HasPrefix(e2.Message, sepErr["message"].(string)), e2.Message)
	// tasks/result (and tasks/list) were removed: method not found (SEP-2663, "Backward Compatibility").
	for _, method := range []string{"tasks/result", "tasks/list"} {
		require.EqualValues(t, -32601, owner.fails(method, map[string]any{"taskId": taskID}).Code, method)
	}
	// The 2025-11-25 task parameter is ignored: a client that does not declare the extension gets no task.
	res = plain.result("tools/call", map[string]any{"name": "os__complete_task", "arguments": map[string]any{"task_id": "00000000-0000-4000-8000-000000000000"},
		"task": map[string]any{"ttl": 60000}})
	require.NotContains(t, res, "taskId")
	require.Equal(t, true, res["isError"], "%v", res)
	requireTaskWire(t, wire)
	fmt.Fprintf(testOutput{t}, "%d answers checked against the SEP's examples and the tasks package's schemas\n", len(wire))
}

// mustJSONRaw encodes v.
func mustJSONRaw(t *testing.T, v any) json.RawMessage {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

// testOutput writes to the test's log.
type testOutput struct{ t *testing.T }

func (w testOutput) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
