package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The code between the doc markers is shown verbatim in docs/adding-a-tool.md (TestAddingAToolDoc checks).

// doc:begin handler

// deferTaskInput is the tool's input: the properties of its input_schema.
type deferTaskInput struct {
	TaskID uuid.UUID `json:"task_id"`
	DueAt  time.Time `json:"due_at"`
}

// deferTaskOutput is its result: the properties of its output_schema.
type deferTaskOutput struct {
	TaskID        uuid.UUID `json:"task_id"`
	DeferredUntil time.Time `json:"deferred_until"`
}

// deferTask pushes a task back until a later date.
func deferTask(ctx context.Context, c *executor.Call, in deferTaskInput) (*deferTaskOutput, error) {
	if in.DueAt.Before(time.Now()) {
		return nil, executor.Invalid("due_at (%s) is in the past", in.DueAt.Format(time.RFC3339))
	}
	var out deferTaskOutput
	err := c.DB.QueryRow(ctx, `UPDATE os_tasks SET status = 'deferred', due_at = $2, updated_at = now()
		WHERE id = $1 RETURNING id, due_at`, in.TaskID, in.DueAt).Scan(&out.TaskID, &out.DeferredUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, executor.NotFound("task %s does not exist", in.TaskID)
	}
	if err != nil {
		return nil, fmt.Errorf("error deferring task: %w", err) // the executor picks the receipt code
	}
	return &out, nil
}

// doc:end handler

// ExampleTyped registers a typed handler. Its input is decoded before it runs: an input its struct cannot
// hold ends the call with validation_error, naming the field.
func ExampleTyped() {
	h := executor.Handlers{}
	// doc:begin register
	h.Func("os.defer_task", executor.Typed(deferTask))
	// doc:end register
	fmt.Println(h.Names())

	call := &executor.Call{Tool: &registry.Tool{Name: "os.defer_task"}, Input: json.RawMessage(`{"task_id": 7, "due_at": "2031-01-01T09:00:00Z"}`)}
	_, err := h["os.defer_task"].Run(context.Background(), call)
	fmt.Println(err)
	// Output:
	// [os.defer_task]
	// validation_error: input does not fit os.defer_task: task_id is a JSON number, which the handler cannot read as uuid.UUID
}
