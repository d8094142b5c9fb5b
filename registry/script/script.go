// Package script runs JavaScript in a sandbox (goja, a pure-Go engine): the programs an LLM writes in code
// mode (run_code) and the tools a person writes as a registry entry of type script. A program sees no file
// system, network, timers or host objects: only console.log and its tools, as functions
// (gem.os.create_task({...}), devices.laptop.files.search({...})) that make a call each and return its
// result or throw its error. Its time, calls, output and memory are bounded; a program past a bound is
// stopped with an error that says which (docs/code-mode.md).
package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// Error codes of a program that did not finish.
const (
	CodeSyntax       = "syntax_error"   // it does not compile
	CodeThrown       = "script_error"   // an exception it did not catch (a tool's error it did not catch too)
	CodeTimeout      = "timeout"        // it ran past its time
	CodeTooManyCalls = "too_many_calls" // it made more calls than allowed
	CodeOutput       = "output_limit"   // it printed more than allowed
	CodeMemory       = "memory_limit"   // the heap grew past the bound while it ran
	CodeResult       = "result_error"   // its result is not JSON (a function, a cycle)
	CodeNoMain       = "no_main"        // a script tool's source defines no function main(input)
)

// Defaults of Limits.
const (
	TimeoutDefault   = 30 * time.Second
	MaxCallsDefault  = 25
	MaxOutputDefault = 64 << 10
	MaxResultDefault = 4 << 20
	MaxMemoryDefault = 128 << 20
	MaxStackDefault  = 500
)

// Limits bound one run. Zero values mean the defaults.
type Limits struct {
	// Timeout bounds the whole run, its calls included.
	Timeout time.Duration
	// MaxCalls bounds the calls the program makes.
	MaxCalls int
	// MaxOutputBytes bounds what console.log prints.
	MaxOutputBytes int
	// MaxResultBytes bounds the program's value, written as JSON.
	MaxResultBytes int
	// MaxMemoryBytes bounds how much the process's live heap may grow while the program runs. It is read
	// from the Go runtime, so it is approximate and shared: programs running at once count each other's
	// memory.
	MaxMemoryBytes int64
	// MaxStack bounds the depth of calls inside the program.
	MaxStack int
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = TimeoutDefault
	}
	if l.MaxCalls <= 0 {
		l.MaxCalls = MaxCallsDefault
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = MaxOutputDefault
	}
	if l.MaxResultBytes <= 0 {
		l.MaxResultBytes = MaxResultDefault
	}
	if l.MaxMemoryBytes <= 0 {
		l.MaxMemoryBytes = MaxMemoryDefault
	}
	if l.MaxStack <= 0 {
		l.MaxStack = MaxStackDefault
	}
	return l
}

// Error is why a program did not finish.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Line and Column locate it in the program's source, when known.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s at line %d, column %d: %s", e.Code, e.Line, e.Column, e.Message)
	}
	return e.Code + ": " + e.Message
}

// Call makes one call of a tool (on device, when not ""), waits for its receipt and returns its result
// and id. A failed receipt is a *ToolError, thrown in the program as an Error it may catch; any other
// error (the call could not be made) ends the program.
type Call func(ctx context.Context, tool, device string, input json.RawMessage) (result json.RawMessage, callID string, err error)

// ToolError is a call that ended failed: its receipt's error.
type ToolError struct {
	Code    string
	Message string
	Details json.RawMessage
}

func (e *ToolError) Error() string { return e.Code + ": " + e.Message }

// Env is what a program may call: Tools (names, domain.method) as gem.<name>, each device's tools as
// devices.<device>.<name>.
type Env struct {
	Tools   []string
	Devices map[string][]string
	Call    Call
}

// CallRecord is one call a program made.
type CallRecord struct {
	Tool   string `json:"tool"`
	Device string `json:"device,omitempty"`
	CallID string `json:"call_id,omitempty"`
	// Status is succeeded or failed (with ErrorCode); unknown when the call was made but its receipt did
	// not come in time; not_made when it could not be made.
	Status    string `json:"status"`
	ErrorCode string `json:"error_code,omitempty"`
}

// Result is how a run ended: its value (what the program returned), what it printed, the calls it made,
// and the error that ended it, if any.
type Result struct {
	Value  json.RawMessage `json:"value,omitempty"`
	Output []string        `json:"output,omitempty"`
	Calls  []CallRecord    `json:"calls"`
	Error  *Error          `json:"error,omitempty"`
}

// Program is compiled source.
type Program struct {
	prog *goja.Program
	// offset is the lines the wrapper adds before the source (run_code's body is wrapped in a function).
	offset int
	// module programs define main(input); body programs are run as the body of a function.
	module bool
}

// CompileBody compiles a program written as the body of a function: it runs top to bottom and returns
// its result with return (run_code).
func CompileBody(name, src string) (*Program, error) {
	p, err := goja.Compile(name, "(function () {\n"+src+"\n})()", false)
	if err != nil {
		return nil, syntaxError(err, 1)
	}
	return &Program{prog: p, offset: 1}, nil
}

// CompileModule compiles a script tool's source, which must define function main(input): main is called
// with the call's input and returns the result. The source's top level runs once per call, before main.
func CompileModule(name, src string) (*Program, error) {
	p, err := goja.Compile(name, src, false)
	if err != nil {
		return nil, syntaxError(err, 0)
	}
	prog := &Program{prog: p, module: true}
	// main must exist once the top level has run: run it once with no tools to see. A top level that runs
	// away would do so on every call: it is refused here too.
	res := prog.Run(context.Background(), Env{}, Limits{Timeout: 2 * time.Second}, json.RawMessage(`null`), true)
	if res.Error != nil && (res.Error.Code == CodeNoMain || res.Error.Code == CodeTimeout || res.Error.Code == CodeMemory) {
		return nil, res.Error
	}
	return prog, nil
}

// syntaxPos finds "Line L:C" in the parser's message ("name: Line 3:11 Unexpected token ;").
var syntaxPos = regexp.MustCompile(`^(?:[^:]*: )?Line (\d+):(\d+) (.*)$`)

func syntaxError(err error, offset int) *Error {
	e := &Error{Code: CodeSyntax, Message: err.Error()}
	var se *goja.CompilerSyntaxError
	if errors.As(err, &se) {
		e.Message = se.Message
		if m := syntaxPos.FindStringSubmatch(se.Message); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Column, _ = strconv.Atoi(m[2])
			e.Line -= offset
			e.Message = m[3]
		}
	}
	return e
}

// stop is the value a run is interrupted with.
type stop struct{ err *Error }

// Run runs the program. For a module, input is main's argument; checkOnly runs only the top level and
// reports whether main is defined.
func (p *Program) Run(ctx context.Context, env Env, limits Limits, input json.RawMessage, checkOnly ...bool) (res Result) {
	limits = limits.withDefaults()
	res.Calls = []CallRecord{}
	defer func() {
		// Whatever a program does, its caller gets a Result: a fault of the engine ends the run, not the host.
		if v := recover(); v != nil {
			res.Error = &Error{Code: CodeThrown, Message: fmt.Sprintf("the sandbox failed running the program: %v", v)}
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, limits.Timeout)
	defer cancel()

	vm := goja.New()
	vm.SetMaxCallStackSize(limits.MaxStack)
	r := &run{vm: vm, ctx: ctx, env: env, limits: limits, res: &res}
	if err := r.install(); err != nil {
		res.Error = &Error{Code: CodeThrown, Message: err.Error()}
		return res
	}

	// The watchdog: the deadline, and the heap's growth.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.watch(done)
	}()
	defer func() {
		close(done)
		wg.Wait()
	}()

	value, err := vm.RunProgram(p.prog)
	if err == nil && p.module {
		main, ok := goja.AssertFunction(vm.Get("main"))
		switch {
		case !ok:
			err = &stopError{&Error{Code: CodeNoMain, Message: "the script defines no function main(input)"}}
		case len(checkOnly) > 0 && checkOnly[0]:
			return res
		default:
			var arg any
			if len(input) > 0 {
				if jerr := json.Unmarshal(input, &arg); jerr != nil {
					res.Error = &Error{Code: CodeThrown, Message: "the input is not JSON: " + jerr.Error()}
					return res
				}
			}
			value, err = main(goja.Undefined(), vm.ToValue(arg))
		}
	}
	if err != nil {
		res.Error = r.failure(err, p.offset)
		return res
	}
	if value == nil || goja.IsUndefined(value) {
		res.Value = json.RawMessage("null")
		return res
	}
	b, e := r.resultJSON(value, p.offset)
	if e != nil {
		res.Error = e
		return res
	}
	res.Value = b
	return res
}

var promiseType = reflect.TypeOf((*goja.Promise)(nil))

// resultJSON writes the program's value as JSON with the runtime's own JSON.stringify, while the watchdog
// still runs: a getter that throws or never returns is the program's error (or its timeout), never a fault
// of the host. A settled promise stands for its value; a pending one is not a result.
func (r *run) resultJSON(value goja.Value, offset int) (json.RawMessage, *Error) {
	if obj, ok := value.(*goja.Object); ok && obj.ExportType() == promiseType {
		pr, _ := obj.Export().(*goja.Promise) // a promise exports itself: no getter runs
		switch {
		case pr == nil || pr.State() == goja.PromiseStatePending:
			return nil, &Error{Code: CodeResult, Message: "the program returned a promise that never settled: nothing in the sandbox can be awaited"}
		case pr.State() == goja.PromiseStateRejected:
			return nil, &Error{Code: CodeThrown, Message: "the program's promise was rejected: " + pr.Result().String()}
		}
		value = pr.Result()
	}
	out, err := r.stringify(goja.Undefined(), value)
	if err != nil {
		return nil, r.failure(err, offset)
	}
	if goja.IsUndefined(out) {
		return nil, &Error{Code: CodeResult, Message: "the result cannot be written as JSON (a function, a symbol or undefined)"}
	}
	b := []byte(out.String())
	if len(b) > r.limits.MaxResultBytes {
		return nil, &Error{Code: CodeResult, Message: fmt.Sprintf("the result is %d bytes as JSON; the bound is %d", len(b), r.limits.MaxResultBytes)}
	}
	return b, nil
}

// stopError carries a limit's error out of RunProgram when it is returned rather than interrupted.
type stopError struct{ err *Error }

func (e *stopError) Error() string { return e.err.Error() }

// failure turns what ended a run into its Error.
func (r *run) failure(err error, offset int) *Error {
	var se *stopError
	if errors.As(err, &se) {
		return se.err
	}
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if s, ok := ie.Value().(stop); ok {
			return s.err
		}
		return &Error{Code: CodeTimeout, Message: fmt.Sprint(ie.Value())}
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return &Error{Code: CodeThrown, Message: fmt.Sprintf("the program's calls nested deeper than %d (endless recursion?)", r.limits.MaxStack)}
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		e := &Error{Code: CodeThrown, Message: ex.Value().String()}
		for _, frame := range ex.Stack() {
			// The first frame in the program's source (a tool's function is a frame of its own, with none).
			if pos := frame.Position(); pos.Line > 0 {
				e.Line, e.Column = pos.Line-offset, pos.Column
				break
			}
		}
		return e
	}
	return &Error{Code: CodeThrown, Message: err.Error()}
}

// run is one run's state.
type run struct {
	vm     *goja.Runtime
	ctx    context.Context
	env    Env
	limits Limits
	res    *Result
	// stringify is JSON.stringify as the runtime defined it.
	stringify goja.Callable

	mu       sync.Mutex
	output   int
	stopOnce sync.Once
}

// halt interrupts the program with an error.
func (r *run) halt(e *Error) {
	r.stopOnce.Do(func() { r.vm.Interrupt(stop{e}) })
}

// watch interrupts the program when its context ends or the heap grows past the bound.
func (r *run) watch(done <-chan struct{}) {
	// The heap's objects now, not as of the last collection: a program must not grow past the bound for a
	// whole GC cycle before it is seen.
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := heapBytes(sample)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-r.ctx.Done():
			r.halt(&Error{Code: CodeTimeout, Message: fmt.Sprintf("the program ran past its %s", r.limits.Timeout)})
			return
		case <-t.C:
			metrics.Read(sample)
			if grown := heapBytes(sample) - base; grown > r.limits.MaxMemoryBytes {
				r.halt(&Error{Code: CodeMemory, Message: fmt.Sprintf("the heap grew by %d MiB while the program ran (bound %d MiB)",
					grown>>20, r.limits.MaxMemoryBytes>>20)})
				return
			}
		}
	}
}

func heapBytes(s []metrics.Sample) int64 {
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// install defines console.log, gem and devices.
func (r *run) install() error {
	// The engine's own JSON.stringify, taken before the program can replace it, writes its result.
	r.stringify, _ = goja.AssertFunction(r.vm.Get("JSON").ToObject(r.vm).Get("stringify"))
	console := r.vm.NewObject()
	if err := console.Set("log", r.log); err != nil {
		return err
	}
	if err := r.vm.Set("console", console); err != nil {
		return err
	}
	gem := r.vm.NewObject()
	for _, t := range r.env.Tools {
		if err := r.define(gem, t, ""); err != nil {
			return err
		}
	}
	if err := r.vm.Set("gem", gem); err != nil {
		return err
	}
	devices := r.vm.NewObject()
	for name, tools := range r.env.Devices {
		d := r.vm.NewObject()
		for _, t := range tools {
			if err := r.define(d, t, name); err != nil {
				return err
			}
		}
		if err := devices.Set(name, d); err != nil {
			return err
		}
	}
	return r.vm.Set("devices", devices)
}

// define makes root.<domain>.<method> the function that calls the tool (on device, when not "").
func (r *run) define(root *goja.Object, tool string, device string) error {
	parts := strings.Split(tool, ".")
	obj := root
	for _, p := range parts[:len(parts)-1] {
		next, ok := obj.Get(p).(*goja.Object)
		if !ok || next == nil {
			next = r.vm.NewObject()
			if err := obj.Set(p, next); err != nil {
				return err
			}
		}
		obj = next
	}
	return obj.Set(parts[len(parts)-1], r.toolFunc(tool, device))
}

// toolFunc is a tool as a function: its one argument is the input (an object; {} when absent).
func (r *run) toolFunc(tool, device string) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		r.mu.Lock()
		n := len(r.res.Calls)
		r.mu.Unlock()
		if n >= r.limits.MaxCalls {
			r.halt(&Error{Code: CodeTooManyCalls, Message: fmt.Sprintf("the program made more than %d calls", r.limits.MaxCalls)})
			panic(r.vm.NewGoError(errors.New("too many calls")))
		}
		input := json.RawMessage(`{}`)
		if arg := fc.Argument(0); !goja.IsUndefined(arg) && !goja.IsNull(arg) {
			b, err := json.Marshal(arg.Export())
			if err != nil {
				panic(r.vm.NewTypeError(fmt.Sprintf("%s: the input cannot be written as JSON: %v", tool, err)))
			}
			input = b
		}
		rec := CallRecord{Tool: tool, Device: device}
		result, callID, err := r.env.Call(r.ctx, tool, device, input)
		rec.CallID = callID
		var ce *ToolError
		switch {
		case err == nil:
			rec.Status = "succeeded"
		case errors.As(err, &ce):
			rec.Status, rec.ErrorCode = "failed", ce.Code
		case callID != "":
			rec.Status = "unknown" // made, but its receipt was not there in time: it may still run
		default:
			rec.Status = "not_made"
		}
		r.mu.Lock()
		r.res.Calls = append(r.res.Calls, rec)
		r.mu.Unlock()
		if err != nil {
			if ce == nil {
				if r.ctx.Err() != nil {
					r.halt(&Error{Code: CodeTimeout, Message: fmt.Sprintf("the program ran past its %s", r.limits.Timeout)})
				} else {
					r.halt(&Error{Code: CodeThrown, Message: fmt.Sprintf("%s could not be called: %v", tool, err)})
				}
				panic(r.vm.NewGoError(err))
			}
			panic(r.toolError(tool, callID, ce))
		}
		var v any
		if err := json.Unmarshal(result, &v); err != nil {
			panic(r.vm.NewTypeError(fmt.Sprintf("%s answered a result that is not JSON", tool)))
		}
		return r.vm.ToValue(v)
	}
}

// toolError is a failed call as the program catches it: an Error named ToolError with the receipt's code,
// message, details and the call's id.
func (r *run) toolError(tool, callID string, ce *ToolError) *goja.Object {
	e := r.vm.NewGoError(fmt.Errorf("%s failed (%s): %s", tool, ce.Code, ce.Message))
	_ = e.Set("name", "ToolError")
	_ = e.Set("code", ce.Code)
	_ = e.Set("tool", tool)
	_ = e.Set("call_id", callID)
	if len(ce.Details) > 0 {
		var d any
		if json.Unmarshal(ce.Details, &d) == nil {
			_ = e.Set("details", d)
		}
	}
	return e
}

// log is console.log: its arguments, strings as they are and other values as JSON, on one line.
func (r *run) log(fc goja.FunctionCall) goja.Value {
	parts := make([]string, len(fc.Arguments))
	for i, a := range fc.Arguments {
		if s, ok := a.Export().(string); ok {
			parts[i] = s
			continue
		}
		b, err := json.Marshal(a.Export())
		if err != nil {
			parts[i] = a.String()
		} else {
			parts[i] = string(b)
		}
	}
	line := strings.Join(parts, " ")
	r.mu.Lock()
	r.output += len(line) + 1
	over := r.output > r.limits.MaxOutputBytes
	if !over {
		r.res.Output = append(r.res.Output, line)
	}
	r.mu.Unlock()
	if over {
		r.halt(&Error{Code: CodeOutput, Message: fmt.Sprintf("the program printed more than %d bytes", r.limits.MaxOutputBytes)})
	}
	return goja.Undefined()
}
