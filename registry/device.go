package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
)

// A device (docs/devices.md) registers the tools it serves as registry entries: full contracts, checked
// like the registry's, without their implementation, which stays on the device (it names local servers,
// paths and secrets the hub has no business knowing).

// DeviceRegistryVersion is the version of the registry documents made of devices' tools.
const DeviceRegistryVersion = "device"

// ParseDeviceTools checks the tools a device registers and returns them as a registry. Every problem is
// reported, naming the tool and field, as Parse does; an implementation is a problem too.
func ParseDeviceTools(tools []json.RawMessage) (*Registry, error) {
	var problems []Problem
	for i, raw := range tools {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil {
			continue // Parse reports it
		}
		if _, ok := fields["implementation"]; ok {
			label := fmt.Sprintf("tools[%d]", i)
			var name string
			if json.Unmarshal(fields["name"], &name) == nil && name != "" {
				label = name
			}
			problems = append(problems, Problem{Tool: label, Field: "implementation",
				Message: "stays on the device: register the tool's contract without it"})
		}
	}
	doc, err := json.Marshal(map[string]any{"version": DeviceRegistryVersion, "tools": tools})
	if err != nil {
		return nil, err
	}
	reg, err := Parse(doc)
	if ce, ok := err.(*CheckError); ok {
		problems = append(problems, ce.Problems...)
	} else if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &CheckError{Problems: problems}
	}
	return reg, nil
}

// ParseDeviceTool compiles one contract a device registered.
func ParseDeviceTool(raw json.RawMessage) (*Tool, error) {
	reg, err := ParseDeviceTools([]json.RawMessage{raw})
	if err != nil {
		return nil, err
	}
	return reg.Tools()[0], nil
}

// Contract is the tool's registry entry without its implementation: what a device registers.
func (t *Tool) Contract() json.RawMessage {
	c := *t
	c.Implementation = nil
	b, err := json.Marshal(&c)
	if err != nil {
		panic(fmt.Sprintf("registry: a loaded tool does not encode: %v", err)) // every field came from JSON
	}
	return b
}

// ContractDiff lists the fields in which two entries of the same tool promise different things to a
// caller: schemas, permissions, idempotency, timeout, receipt fields, outside effects, whether any device
// may run it, size limits and approval. Descriptions may differ.
func ContractDiff(a, b *Tool) []string {
	var diff []string
	if !sameJSON(a.InputSchema, b.InputSchema) {
		diff = append(diff, "input_schema")
	}
	if !sameJSON(a.OutputSchema, b.OutputSchema) {
		diff = append(diff, "output_schema")
	}
	if !slices.Equal(sorted(a.Permissions), sorted(b.Permissions)) {
		diff = append(diff, "permissions")
	}
	if a.Idempotency != b.Idempotency {
		diff = append(diff, "idempotency")
	}
	if a.TimeoutMS != b.TimeoutMS {
		diff = append(diff, "timeout_ms")
	}
	if !slices.Equal(a.ReceiptFields, b.ReceiptFields) {
		diff = append(diff, "receipt_fields")
	}
	if a.HasOutsideEffects() != b.HasOutsideEffects() {
		diff = append(diff, "outside_effects")
	}
	if a.DeviceAgnostic != b.DeviceAgnostic {
		diff = append(diff, "device_agnostic")
	}
	if a.MaxInput(0) != b.MaxInput(0) || a.MaxResult(0) != b.MaxResult(0) || !sameCallLimits(a.Limits, b.Limits) {
		diff = append(diff, "limits")
	}
	ar, ad := a.ApprovalRequired()
	br, bd := b.ApprovalRequired()
	if ar != br || ad != bd {
		diff = append(diff, "approval")
	}
	return diff
}

// sameCallLimits compares the concurrency and rate limits and the wait of two tools' limits.
func sameCallLimits(a, b *Limits) bool {
	var x, y Limits
	if a != nil {
		x = *a
	}
	if b != nil {
		y = *b
	}
	return reflect.DeepEqual(x.Concurrency, y.Concurrency) && reflect.DeepEqual(x.Rate, y.Rate) && x.MaxWaitMS == y.MaxWaitMS
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// sameJSON compares two JSON documents by value (key order and spacing aside).
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}

// The device protocol: JSON text messages over one WebSocket between a device and the hub (docs/devices.md).
const (
	// Device → hub.
	DeviceMsgRegister  = "register"
	DeviceMsgAnswer    = "answer"
	DeviceMsgHeartbeat = "heartbeat"
	// Hub → device.
	DeviceMsgRegistered = "registered"
	DeviceMsgCall       = "call"
	DeviceMsgAck        = "ack"
	DeviceMsgCancel     = "cancel"
)

// DeviceMessage is one message of the device protocol; Type says which fields it carries.
type DeviceMessage struct {
	Type string `json:"type"`

	// register: the tools' contracts, the attempts the device is running, and answers not yet acked.
	Tools   []json.RawMessage `json:"tools,omitempty"`
	Running []int64           `json:"running,omitempty"`
	Answers []DeviceAnswer    `json:"answers,omitempty"`
	// Version is the device's build, for the operator.
	Version string `json:"version,omitempty"`

	// registered: the device's name, how often to heartbeat, and why a registration was refused.
	Device      string    `json:"device,omitempty"`
	HeartbeatMS int64     `json:"heartbeat_ms,omitempty"`
	Problems    []Problem `json:"problems,omitempty"`

	// call, ack, cancel: the attempt; call also carries the call and what to run.
	Attempt   int64           `json:"attempt,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	TimeoutMS int64           `json:"timeout_ms,omitempty"`

	// answer.
	Answer *DeviceAnswer `json:"answer,omitempty"`
}

// DeviceAnswer is how an attempt ended on the device: succeeded with a result, or failed with an error.
type DeviceAnswer struct {
	Attempt int64           `json:"attempt"`
	Status  ReceiptStatus   `json:"status"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *CallError      `json:"error,omitempty"`
}
