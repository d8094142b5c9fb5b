package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/script"
)

// scriptHandler runs a script tool: its main(input) in the sandbox, bounded by the tool's timeout, with the
// tools its entry lists callable as gem.<domain>.<method>(input), each a call with a receipt of its own.
func scriptHandler(t *registry.Tool) executor.Handler {
	im := t.Implementation
	return executor.Handler{
		// Its calls commit on their own: a script never shares a batch.
		Isolated: true,
		Run: func(ctx context.Context, c *executor.Call) (any, error) {
			env := script.Env{Tools: im.Calls, Call: func(ctx context.Context, tool, _ string, input json.RawMessage) (json.RawMessage, string, error) {
				result, id, err := c.Invoke(ctx, tool, input)
				var ce *registry.CallError
				if errors.As(err, &ce) {
					return nil, id, &script.ToolError{Code: string(ce.Code), Message: ce.Message, Details: ce.Details}
				}
				return result, id, err
			}}
			res := im.Program().Run(ctx, env, script.Limits{Timeout: t.Timeout()}, c.Input)
			if res.Error != nil {
				details := map[string]any{"script_code": res.Error.Code, "calls": res.Calls}
				if res.Error.Line > 0 {
					details["line"], details["column"] = res.Error.Line, res.Error.Column
				}
				if len(res.Output) > 0 {
					details["output"] = res.Output
				}
				return nil, &executor.Error{Code: registry.CodeScriptError, Message: fmt.Sprintf("the script failed (%s): %s", res.Error.Code, res.Error.Message),
					Details: details}
			}
			return res.Value, nil
		},
	}
}
