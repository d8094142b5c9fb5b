package script_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/registry/script"
	"github.com/stretchr/testify/require"
)

// calls records the calls a program makes and answers them: a tool named *.fail fails.
type calls struct {
	mu   sync.Mutex
	made []string
}

func (c *calls) call(_ context.Context, tool, device string, input json.RawMessage) (json.RawMessage, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.made = append(c.made, fmt.Sprintf("%s@%s %s", tool, device, input))
	id := fmt.Sprintf("call-%d", len(c.made))
	if strings.HasSuffix(tool, ".fail") {
		return nil, id, &script.ToolError{Code: "not_found", Message: "no such task", Details: json.RawMessage(`{"id": 7}`)}
	}
	return json.RawMessage(fmt.Sprintf(`{"echo": %s, "n": %d}`, input, len(c.made))), id, nil
}

func env(_ *testing.T, c *calls) script.Env {
	return script.Env{
		Tools:   []string{"os.create_task", "os.fail", "integrations.highlevel.sync_contacts"},
		Devices: map[string][]string{"laptop": {"files.search"}, "home-server": {"files.search"}},
		Call:    c.call,
	}
}

func runBody(t *testing.T, src string, limits script.Limits) (script.Result, *calls) {
	t.Helper()
	p, err := script.CompileBody("program.js", src)
	require.NoError(t, err)
	c := &calls{}
	return p.Run(context.Background(), env(t, c), limits, nil), c
}

func TestProgramCallsToolsAndReturns(t *testing.T) {
	t.Parallel()
	res, c := runBody(t, `
		const a = gem.os.create_task({title: "call John", domain: "business"});
		const b = devices.laptop.files.search({pattern: "invoice"});
		const d = devices["home-server"].files.search();
		gem.integrations.highlevel.sync_contacts({limit: 5});
		console.log("made", a.n, {b: b.n});
		return {first: a.echo.title, second: b.n, third: d.echo};`, script.Limits{})
	require.Nil(t, res.Error)
	require.JSONEq(t, `{"first": "call John", "second": 2, "third": {}}`, string(res.Value))
	require.Equal(t, []string{`made 1 {"b":2}`}, res.Output)
	require.Equal(t, []string{
		`os.create_task@ {"domain":"business","title":"call John"}`,
		`files.search@laptop {"pattern":"invoice"}`,
		`files.search@home-server {}`,
		`integrations.highlevel.sync_contacts@ {"limit":5}`,
	}, c.made)
	require.Len(t, res.Calls, 4)
	require.Equal(t, script.CallRecord{Tool: "files.search", Device: "laptop", CallID: "call-2", Status: "succeeded"}, res.Calls[1])
}

func TestToolErrorsAreThrown(t *testing.T) {
	t.Parallel()
	// Caught: the program sees the receipt's code, details and the call id, and goes on.
	res, _ := runBody(t, `
		try { gem.os.fail({id: 7}); } catch (e) { return {name: e.name, code: e.code, id: e.details.id, call: e.call_id, msg: e.message}; }`, script.Limits{})
	require.Nil(t, res.Error)
	require.JSONEq(t, `{"name": "ToolError", "code": "not_found", "id": 7, "call": "call-1", "msg": "os.fail failed (not_found): no such task"}`, string(res.Value))
	require.Equal(t, "failed", res.Calls[0].Status)
	require.Equal(t, "not_found", res.Calls[0].ErrorCode)

	// Not caught: the program ends with it, at its line.
	res, _ = runBody(t, "const x = 1;\ngem.os.fail({});\nreturn 2;", script.Limits{})
	require.NotNil(t, res.Error)
	require.Equal(t, script.CodeThrown, res.Error.Code)
	require.Contains(t, res.Error.Message, "no such task")
	require.Equal(t, 2, res.Error.Line)
}

func TestProgramErrors(t *testing.T) {
	t.Parallel()
	_, err := script.CompileBody("p.js", "const a = 1;\nreturn a +;")
	var se *script.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, script.CodeSyntax, se.Code)
	require.Equal(t, 2, se.Line)

	res, _ := runBody(t, "let o = null;\n\nreturn o.x;", script.Limits{})
	require.Equal(t, script.CodeThrown, res.Error.Code)
	require.Equal(t, 3, res.Error.Line)
	require.Contains(t, res.Error.Message, "TypeError")

	res, _ = runBody(t, "return function () {};", script.Limits{})
	require.Equal(t, script.CodeResult, res.Error.Code)
}

// What a program returns is written as JSON inside the sandbox: a getter that throws or loops, a promise, a
// value past the bound and a JSON.stringify the program replaced end the run with an error, not the host.
func TestHostileResults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src string
		limits    script.Limits
		code      string
		value     string
		message   string
	}{
		{"a getter that throws", "return {get x() { throw new Error('boom'); }};", script.Limits{}, script.CodeThrown, "", "boom"},
		{"a getter that never returns", "return {get x() { while (true) {} }};", script.Limits{Timeout: 200 * time.Millisecond}, script.CodeTimeout, "", ""},
		{"a settled promise", "return Promise.resolve({n: 5});", script.Limits{}, "", `{"n": 5}`, ""},
		{"an async main", "return (async () => 7)();", script.Limits{}, "", `7`, ""},
		{"a rejected promise", "return Promise.reject('no');", script.Limits{}, script.CodeThrown, "", "rejected: no"},
		{"a promise never settled", "return new Promise(() => {});", script.Limits{}, script.CodeResult, "", "never settled"},
		{"a result past the bound", "return 'x'.repeat(2000);", script.Limits{MaxResultBytes: 1000}, script.CodeResult, "", "the bound is 1000"},
		{"JSON.stringify replaced", "JSON.stringify = () => 'not json'; return {ok: true};", script.Limits{}, "", `{"ok": true}`, ""},
		{"endless recursion", "function f(n) { return f(n + 1) + 1; } return f(0);", script.Limits{MaxStack: 100}, script.CodeThrown, "", "deeper than 100"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, _ := runBody(t, c.src, c.limits)
			if c.code == "" {
				require.Nil(t, res.Error)
				require.JSONEq(t, c.value, string(res.Value))
				return
			}
			require.NotNil(t, res.Error, "value %s", res.Value)
			require.Equal(t, c.code, res.Error.Code, res.Error.Message)
			require.Contains(t, res.Error.Message, c.message)
		})
	}
}

func TestSandboxHasNoHostObjects(t *testing.T) {
	t.Parallel()
	res, _ := runBody(t, `return [typeof require, typeof process, typeof setTimeout, typeof setInterval, typeof fetch,
		typeof XMLHttpRequest, typeof globalThis.os, typeof Deno, typeof module];`, script.Limits{})
	require.Nil(t, res.Error)
	require.JSONEq(t, `["undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined"]`, string(res.Value))
}

func TestLimitsStopRunawayPrograms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src string
		limits    script.Limits
		code      string
	}{
		{"an endless loop", "while (true) {}", script.Limits{Timeout: 200 * time.Millisecond}, script.CodeTimeout},
		{"an endless loop that catches everything", "while (true) { try { while (true) {} } catch (e) {} }", script.Limits{Timeout: 200 * time.Millisecond}, script.CodeTimeout},
		{"too many calls", "for (let i = 0; i < 100; i++) { try { gem.os.create_task({}); } catch (e) {} }", script.Limits{MaxCalls: 3}, script.CodeTooManyCalls},
		{"too much output", "for (;;) console.log('x'.repeat(100));", script.Limits{MaxOutputBytes: 1000}, script.CodeOutput},
		{"a heap that grows", "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length);", script.Limits{MaxMemoryBytes: 64 << 20, Timeout: 20 * time.Second}, script.CodeMemory},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			res, made := runBody(t, c.src, c.limits)
			require.NotNil(t, res.Error, c.name)
			require.Equal(t, c.code, res.Error.Code, res.Error.Message)
			require.Less(t, time.Since(start), 15*time.Second)
			if c.code == script.CodeTooManyCalls {
				require.Len(t, made.made, 3, "no call past the bound is made")
			}
		})
	}
}

func TestModuleMain(t *testing.T) {
	t.Parallel()
	p, err := script.CompileModule("tool.js", `
		const greeting = "hello";
		function main(input) {
			const t = gem.os.create_task({title: greeting + " " + input.name});
			return {task: t.n, said: t.echo.title};
		}`)
	require.NoError(t, err)
	c := &calls{}
	res := p.Run(context.Background(), env(t, c), script.Limits{}, json.RawMessage(`{"name": "Ann"}`))
	require.Nil(t, res.Error)
	require.JSONEq(t, `{"task": 1, "said": "hello Ann"}`, string(res.Value))

	_, err = script.CompileModule("tool.js", `function mian(input) { return 1; }`)
	var se *script.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, script.CodeNoMain, se.Code)

	_, err = script.CompileModule("tool.js", `function main(input) { return 1; } while (true) {}`)
	require.ErrorAs(t, err, &se)
	require.Equal(t, script.CodeTimeout, se.Code, "a top level that never ends is refused when the registry is checked")
}
