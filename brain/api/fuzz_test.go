package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	"github.com/labstack/echo/v4"
)

// fuzzBodies are the request bodies the fuzz target decodes, each as far as its handler goes before the
// database: the run, the call (checked against the registry), the agent, the skill (its tools checked), the
// skill import (SKILL.md parsed), the assignment and the chat.
var fuzzBodies = []struct {
	name   string
	decode func(s *Server, c echo.Context) error
}{
	{"run", func(s *Server, c echo.Context) error {
		_, _, err := decodeBody[brain.RunParams](c, runSchema, "")
		return err
	}},
	{"call", func(s *Server, c echo.Context) error { _, err := s.decodeCall(c); return err }},
	{"agent", func(s *Server, c echo.Context) error { _, err := decodeAgent(c); return err }},
	{"skill", func(s *Server, c echo.Context) error { _, _, err := s.decodeSkill(c, brain.SkillCreate); return err }},
	{"skill patch", func(s *Server, c echo.Context) error { _, _, err := s.decodeSkill(c, brain.SkillPatch); return err }},
	{"skill import", func(s *Server, c echo.Context) error { _, err := s.decodeImport(c); return err }},
	{"assignment", func(s *Server, c echo.Context) error {
		_, _, err := decodeBody[brain.AssignmentParams](c, assignmentSchema, "{}")
		return err
	}},
	{"chat", func(s *Server, c echo.Context) error {
		_, _, err := decodeBody[brain.ChatParams](c, chatSchema, "")
		return err
	}},
}

// FuzzRequestBodies sends any bytes as the body of each kind of request through the server's own error
// handling: nothing panics, and every refusal is a 4xx carrying an error code and a message (a body the
// decoding accepts answers 200 here).
func FuzzRequestBodies(f *testing.F) {
	reg, err := registry.Load("../../tools.registry.json")
	if err != nil {
		f.Fatal(err)
	}
	s := &Server{reg: reg, cfg: Config{MaxBody: 1 << 20}}
	e := echo.New()
	e.HTTPErrorHandler = s.handleError
	for i, b := range fuzzBodies {
		e.POST("/"+string(rune('a'+i)), func(c echo.Context) error {
			if err := b.decode(s, c); err != nil {
				return err
			}
			return c.NoContent(http.StatusOK)
		})
	}

	seeds := []string{
		`{"message": "create a task to call Ann", "mode": "plan"}`,
		`{"message": "x", "context": {"lead_id": "not-a-uuid"}, "limits": {"max_tool_calls": 0}}`,
		`{"tool": "os.create_task", "input": {"title": "call Ann", "domain": "business"}}`,
		`{"tool": "os.create_task", "input": {"title": 7}}`,
		`{"tool": "nope.nope", "input": []}`,
		`{"slug": "office", "name": "Office", "instructions": "help", "temperature": 3}`,
		`{"slug": "notes", "name": "Notes", "tools": ["os.create_note", "os.nothing"], "requires": ["x"]}`,
		`{"content": "---\nname: notes\ndescription: take notes\n---\n# Notes\n", "files": [{"path": "../x", "content": "a"}]}`,
		`{"content": "---\nname: [\n---\n"}`,
		`{"priority": -1, "allowed_users": [""], "call_priority": 9}`,
		`{"message": "hi", "user_id": "u1", "session_id": ""}`,
		`{"message": "\u0000"}`,
		`{"message": "x", "message": "y"}`,
		`[]`, `null`, `{`, ``, `"\ud800"`, `{"tool": "os.create_task", "input": {"title": "\ud800"}}`,
	}
	for i := range fuzzBodies {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s))
		}
	}

	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		i := int(kind) % len(fuzzBodies)
		req := httptest.NewRequest(http.MethodPost, "/"+string(rune('a'+i)), bytes.NewReader(body))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK {
			return
		}
		if rec.Code < 400 || rec.Code > 499 {
			t.Fatalf("%s body %q: status %d, want 200 or a 4xx: %s", fuzzBodies[i].name, body, rec.Code, rec.Body.Bytes())
		}
		var out errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.OK || len(out.Errors) == 0 {
			t.Fatalf("%s body %q: %d with a body that is not an error list: %s", fuzzBodies[i].name, body, rec.Code, rec.Body.Bytes())
		}
		if e := out.Errors[0]; e.Code == "" || e.Message == "" {
			t.Fatalf("%s body %q: an error without a code or a message: %s", fuzzBodies[i].name, body, rec.Body.Bytes())
		}
	})
}
