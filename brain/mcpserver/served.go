package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// servedTool is one tool the server serves: a registry tool (or a device's), or GEM's own.
type servedTool struct {
	// gemName is GEM's dotted name; the MCP name is def.Name, its portable form.
	gemName string
	// tool is the registry's tool; nil for GEM's own.
	tool *registry.Tool
	def  *mcp.Tool

	// output is def.OutputSchema compiled, once, when the tool first answers.
	outputOnce sync.Once
	output     *registry.Schema
	outputErr  error
}

// outputSchema is the compiled schema the tool's answers are held to: the one tools/list advertises.
func (st *servedTool) outputSchema() (*registry.Schema, error) {
	st.outputOnce.Do(func() {
		doc, err := json.Marshal(st.def.OutputSchema)
		if err != nil {
			st.outputErr = err
			return
		}
		st.output, st.outputErr = registry.CompileSchema(st.gemName+" MCP output", doc)
	})
	return st.output, st.outputErr
}

// addTools serves registry tools, each under its portable name with GEM's name in its title and _meta.
func (s *Server) addTools(tools []*registry.Tool) {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	for _, t := range tools {
		def := Tool(t)
		s.served[def.Name] = &servedTool{gemName: t.Name, tool: t, def: def}
		s.mcp.AddTool(def, s.callTool(t))
	}
}

// addOwnTool serves one of GEM's own tools (def named by its GEM name, which it is listed by portably).
func (s *Server) addOwnTool(gemName string, def *mcp.Tool, h mcp.ToolHandler) {
	named := *def
	named.Name = registry.PortableName(gemName)
	named.Meta = mcp.Meta{llm.MCPMetaName: gemName}
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	s.served[named.Name] = &servedTool{gemName: gemName, def: &named}
	s.mcp.AddTool(&named, h)
}

// removeTools stops serving registry tools.
func (s *Server) removeTools(tools []*registry.Tool) {
	names := make([]string, len(tools))
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	for i, t := range tools {
		names[i] = registry.PortableName(t.Name)
		delete(s.served, names[i])
	}
	s.mcp.RemoveTools(names...)
}

// servedByName finds a served tool by either of its names, portable or GEM's dotted one.
func (s *Server) servedByName(name string) *servedTool {
	s.servedMu.RLock()
	defer s.servedMu.RUnlock()
	return s.served[registry.PortableName(name)]
}

// toolMethods is what GEM adds to the SDK's tools/list and tools/call: the list holds only the tools the caller
// may call, by the names it asked for; a call names a tool either way; and every answer matches the output
// schema its tool advertises, or is an error that does.
func (s *Server) toolMethods(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			res, err := next(ctx, method, req)
			if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				return s.listFor(ctx, callerOf(ctx), list)
			}
			return res, err
		case "tools/call":
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if !ok {
				return next(ctx, method, req)
			}
			st := s.servedByName(p.Name)
			if st != nil {
				p.Name = st.def.Name // the SDK knows the tool by its portable name
			}
			res, err := next(ctx, method, req)
			if answer, ok := res.(*mcp.CallToolResult); ok && err == nil && st != nil {
				return s.conform(ctx, st, answer), nil
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// listFor keeps, of the tools the SDK lists, those the caller may call: gem.get_receipt; gem.approve for a
// caller holding approve that speaks for no agent; and the registry's tools whose permissions the caller's
// grants cover, of its agent's when it speaks for one. The executor checks again when a call runs.
func (s *Server) listFor(ctx context.Context, c Caller, list *mcp.ListToolsResult) (*mcp.ListToolsResult, error) {
	var enabled map[string]bool
	if c.Agent != "" {
		tools, err := postgres.AgentTools(ctx, s.pool, s.reg, c.Agent, c.userOf())
		if err != nil {
			return nil, s.internal(ctx, err, "error reading the agent's tools")
		}
		enabled = make(map[string]bool, len(tools))
		for _, t := range tools {
			enabled[t.Name] = true
		}
	}
	kept := make([]*mcp.Tool, 0, len(list.Tools))
	for _, t := range list.Tools {
		st := s.servedByName(t.Name)
		if st == nil || !c.mayCall(st, enabled) {
			continue
		}
		if c.DottedNames {
			named := *t // the SDK's own, which must not change
			named.Name = st.gemName
			t = &named
		}
		kept = append(kept, t)
	}
	list.Tools = kept
	return list, nil
}

// mayCall says whether a tool is the caller's to call; enabled are its agent's tools when it speaks for one.
func (c Caller) mayCall(st *servedTool, enabled map[string]bool) bool {
	switch {
	case st.gemName == GetReceiptTool:
		return true
	case st.gemName == ApproveTool:
		return c.Agent == "" && c.Grants.Allows(registry.PermissionApprove)
	case st.tool == nil:
		return false
	case enabled != nil && !enabled[st.gemName]:
		return false
	}
	return c.Grants.Missing(st.tool.Permissions) == nil
}

// conform holds a tools/call answer to the output schema its tool advertises, which clients check
// structuredContent against (errors included): an answer that breaks it is a fault of GEM's, logged, and the
// client gets an isError answer that keeps to the schema's error branch, with the text it would have had.
func (s *Server) conform(ctx context.Context, st *servedTool, answer *mcp.CallToolResult) *mcp.CallToolResult {
	var problem string
	schema, err := st.outputSchema()
	switch {
	case err != nil:
		problem = "its output schema does not compile: " + err.Error()
	case answer.StructuredContent == nil && answer.IsError:
		return answer // clients check no structured content of an error without any
	case answer.StructuredContent == nil:
		problem = "it has no structured content"
	default:
		doc, err := json.Marshal(answer.StructuredContent)
		if err != nil {
			problem = "its structured content does not encode: " + err.Error()
		} else if err := schema.Validate(doc); err != nil {
			problem = err.Error()
		}
	}
	if problem == "" {
		return answer
	}
	s.logger(ctx).Error().Str("tool", st.gemName).Str("problem", problem).Msg("an MCP answer broke its tool's output schema; answered as an error")
	e := map[string]any{"code": string(registry.CodeOutputContract),
		"message": fmt.Sprintf("GEM's answer for %s broke the tool's outputSchema (a fault of GEM's, logged): %s", st.gemName, problem)}
	structured := map[string]any{"tool": st.gemName, "status": string(registry.StatusFailed), "error": e}
	if id, ok := answer.Meta[metaCallID].(string); ok {
		structured["call_id"] = id
	}
	content := append([]mcp.Content{&mcp.TextContent{Text: e["message"].(string)}}, answer.Content...)
	return &mcp.CallToolResult{Meta: answer.Meta, IsError: true, StructuredContent: structured, Content: content}
}
