package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Printing the API's answers for a person (every command prints its JSON with -json instead): an object as
// "field: value" lines, a list of objects as aligned columns, notes and tokens as they are.

// listColumns are the columns a list shows, by the answer's field that holds it; other lists show their
// first few fields.
var listColumns = map[string][]string{
	"callers":   {"name", "kind", "permissions", "agents", "has_token", "revoked_at", "note"},
	"devices":   {"name", "owner", "alive", "connected", "permissions", "tools"},
	"approvals": {"call_id", "tool", "requested_by", "agent", "required_by", "expires_at"},
	"skills":    {"skill", "enabled", "priority", "available"},
	"agents":    {"slug", "name", "enabled", "model"},
	"files":     {"path", "media_type", "size"},
}

// lastFields are printed after the rest: what the person must act on.
var lastFields = []string{"note", "token"}

// printAnswer prints an API answer (not an error answer: apiError prints those).
func printAnswer(w io.Writer, body map[string]any) {
	keys := make([]string, 0, len(body))
	for k := range body {
		if k != "ok" && k != "errors" && k != "next_cursor" {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := slices.Index(lastFields, keys[i]), slices.Index(lastFields, keys[j])
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		switch v := body[k].(type) {
		case map[string]any:
			fmt.Fprintf(w, "%s:\n", k)
			printFields(w, v, "  ")
		case []any:
			if len(v) == 0 {
				fmt.Fprintf(w, "%s: none\n", k)
				continue
			}
			if rows, ok := objects(v); ok {
				fmt.Fprintf(w, "%s (%d):\n", k, len(rows))
				printObjects(w, k, rows)
				continue
			}
			fmt.Fprintf(w, "%s: %s\n", k, text(v))
		default:
			fmt.Fprintf(w, "%s: %s\n", k, text(v))
		}
	}
	printErrors(w, body)
	if next, _ := body["next_cursor"].(string); next != "" {
		fmt.Fprintf(w, "more: add -cursor %s\n", next)
	}
}

// printErrors prints an answer's errors (an ok false answer of 200: a failed call, a wait that ended).
func printErrors(w io.Writer, body map[string]any) {
	errs, _ := body["errors"].([]any)
	for _, e := range errs {
		if m, ok := e.(map[string]any); ok {
			fmt.Fprintf(w, "error %v: %v\n", m["code"], m["message"])
		}
	}
}

// printFields prints an object's fields, one a line.
func printFields(w io.Writer, obj map[string]any, indent string) {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		fmt.Fprintf(w, "%s%s: %s\n", indent, k, text(obj[k]))
	}
}

// printObjects prints a list of objects as columns.
func printObjects(w io.Writer, field string, rows []map[string]any) {
	cols := listColumns[field]
	if cols == nil {
		for _, k := range slices.Sorted(maps.Keys(rows[0])) {
			if _, nested := rows[0][k].(map[string]any); !nested && len(cols) < 6 {
				cols = append(cols, k)
			}
		}
	}
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = strings.ToUpper(c)
	}
	table := make([][]string, len(rows))
	for i, r := range rows {
		for _, c := range cols {
			table[i] = append(table[i], clip(text(r[c]), 60))
		}
	}
	printTable(w, header, table)
}

// objects reports whether a list holds only objects, and returns them.
func objects(list []any) ([]map[string]any, bool) {
	if len(list) == 0 {
		return nil, false
	}
	out := make([]map[string]any, 0, len(list))
	for _, v := range list {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

// text is a value on one line: text as it is, lists of text joined, anything else as compact JSON.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		return orDash(v)
	case []any:
		parts := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				parts = append(parts, s)
			} else {
				b, _ := json.Marshal(x)
				parts = append(parts, string(b))
			}
		}
		return orDash(strings.Join(parts, ","))
	case float64, bool:
		return fmt.Sprint(v)
	}
	b, _ := json.Marshal(v)
	return clip(string(b), 200)
}

// printCallAnswer prints a call and its receipt (brain call, brain receipt): one line saying how it ended,
// then its result or error.
func printCallAnswer(w io.Writer, body map[string]any) {
	call, _ := body["call"].(map[string]any)
	receipt, _ := body["receipt"].(map[string]any)
	status := call["status"]
	if receipt != nil {
		status = receipt["status"]
	}
	line := fmt.Sprintf("%v  %v  call %v", status, call["tool"], call["id"])
	if receipt != nil {
		line += fmt.Sprintf("  %v ms", receipt["duration_ms"])
		if hit, _ := receipt["idempotency_hit"].(bool); hit {
			line += fmt.Sprintf("  (idempotency hit: the result of call %v)", receipt["idempotency_of"])
		}
	}
	fmt.Fprintln(w, line)
	switch {
	case receipt != nil:
		if e, ok := receipt["error"].(map[string]any); ok {
			fmt.Fprintf(w, "error %v: %v\n", e["code"], e["message"])
		}
		if r := receipt["result"]; r != nil {
			fmt.Fprintf(w, "result: %s\n", text(r))
		}
	case call["status"] != "awaiting_approval":
		fmt.Fprintf(w, "no receipt yet: the call keeps running (brain receipt %v -wait 30s)\n", call["id"])
	}
	if a, ok := body["approval"].(map[string]any); ok {
		fmt.Fprintf(w, "approval: needs %v, until %v", a["required_by"], a["expires_at"])
		if d, _ := a["decision"].(string); d != "" {
			fmt.Fprintf(w, "; %s by %v", d, a["decided_by"])
		}
		fmt.Fprintln(w)
	}
	printErrors(w, body)
}
