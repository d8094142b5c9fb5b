package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/api"
	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
)

// cliClient is a client of the brain, and where its token came from for the hint after a 401.
type cliClient struct {
	*api.Client
	tokenSource string
}

// newCLIClient finds the brain's URL and the token (see findToken) from the flags' values and the environment.
func newCLIClient(urlFlag, tokenFlag string, getenv func(string) string) *cliClient {
	token, source := findToken(tokenFlag, getenv)
	return &cliClient{Client: &api.Client{BaseURL: brainURL(urlFlag, getenv), Token: token,
		HTTP: &http.Client{Transport: unreachableHint{http.DefaultTransport}}}, tokenSource: source}
}

// unreachableHint says what to check when nothing answers at the brain's address, for every command.
type unreachableHint struct{ next http.RoundTripper }

func (t unreachableHint) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil && api.Unreachable(err) {
		err = fmt.Errorf("%w\n  nothing answers at %s: is the brain running? `make run` starts one (in GEM's folder); "+
			"if it runs elsewhere, point GEM_BRAIN_URL (or -url) at it, with its token in GEM_BRAIN_TOKEN (or -token)", err, r.URL.Host)
	}
	return resp, err
}

func clientFrom(fs *flag.FlagSet, getenv func(string) string) func() *cliClient {
	url := fs.String("url", "", "brain URL")
	token := fs.String("token", "", "bearer token")
	return func() *cliClient { return newCLIClient(*url, *token, getenv) }
}

// flagExit is the exit status of a command whose flags did not parse: 0 for -h (the flag package printed
// the command's flags), 2 otherwise.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// approveRun runs a plan stored with -M plan: brain approve RUN_ID [-wait] [-timeout 30s].
func approveRun(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wait := fs.Bool("wait", false, "wait for the calls' receipts and print the answer")
	timeout := waitFlag(30 * time.Second)
	fs.Var(&timeout, "timeout", "how long -wait waits: milliseconds or a duration (1s..2m)")
	asJSON := fs.Bool("json", false, "print the JSON response")
	client := clientFrom(fs, getenv)
	id, rest := firstArg(args)
	if err := fs.Parse(rest); err != nil {
		return flagExit(err)
	}
	if id == "" {
		fmt.Fprintln(stderr, "usage: brain approve RUN_ID [-wait] [-timeout 30s|30000] [-json]")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeout)+15*time.Second)
	defer cancel()
	c := client()
	resp, status, err := c.Approve(ctx, id, *wait, time.Duration(timeout))
	if err != nil {
		fmt.Fprintln(stderr, "brain approve:", err)
		return 1
	}
	printRun(stdout, stderr, resp, status, *asJSON, c.tokenSource)
	if resp.OK && status < 300 {
		return 0
	}
	return 1
}

// showReceipt prints a call and its receipt: brain receipt CALL_ID [-wait 30s]. It exits 0 when the call
// succeeded, 1 when it failed or has no receipt yet.
func showReceipt(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("receipt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wait := fs.Duration("wait", 0, "wait up to this long for the receipt (at most 60s)")
	asJSON := fs.Bool("json", false, "print the API's JSON answer")
	client := clientFrom(fs, getenv)
	id, rest := firstArg(args)
	if err := fs.Parse(rest); err != nil {
		return flagExit(err)
	}
	if id == "" {
		fmt.Fprintln(stderr, "usage: brain receipt CALL_ID [-wait 30s] [-json]")
		return 2
	}
	path := "/calls/" + url.PathEscape(id)
	if *wait > 0 {
		path += "?wait=" + wait.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait+15*time.Second)
	defer cancel()
	body, ok := printBody(ctx, client(), http.MethodGet, path, nil, false, "brain receipt", *asJSON, printCallAnswer, stdout, stderr)
	if !ok {
		return 1
	}
	receipt, _ := body["receipt"].(map[string]any)
	if receipt == nil {
		if *asJSON {
			fmt.Fprintln(stderr, "brain receipt: no receipt yet; the call keeps running (try -wait 30s)")
		}
		return 1
	}
	if receipt["status"] != "succeeded" {
		return 1
	}
	return 0
}

// printBody sends a request and prints the answer — for a person with human, as indented JSON with asJSON —
// or the error answer (with a token hint after a 401); it reports whether the request succeeded.
func printBody(ctx context.Context, c *cliClient, method, path string, req any, keyed bool, name string, asJSON bool, human func(io.Writer, map[string]any),
	stdout, stderr io.Writer) (map[string]any, bool) {
	var body map[string]any
	status, err := c.DoKeyed(ctx, method, path, req, keyed, &body)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, false
	}
	if apiError(stdout, name, status, body) {
		tokenHint(stderr, status, c.tokenSource)
		return nil, false
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(body)
	} else {
		human(stdout, body)
	}
	return body, true
}

// encoded encodes what the CLI built itself (maps of decoded answers), which always encodes.
func encoded(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// firstArg splits a leading positional argument from the flags after it.
func firstArg(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

// tokenHint says, after a 401, where the CLI looked for a token and where the one it sent came from, so a
// person outside the repository knows what to set.
func tokenHint(w io.Writer, status int, source string) {
	if status != http.StatusUnauthorized {
		return
	}
	if source == "" {
		source = "none found"
	}
	fmt.Fprintf(w, "  the token comes from -token, $GEM_BRAIN_TOKEN, the first of $GEM_BRAIN_TOKENS, or .gem/brain-token in the working folder or a parent (used: %s)\n", source)
}

// apiError prints an error answer ({"ok": false, "errors": [...]}) and reports whether there was one.
func apiError(w io.Writer, prefix string, status int, body map[string]any) bool {
	if status < 300 {
		return false
	}
	errs, _ := body["errors"].([]any)
	for _, e := range errs {
		if m, ok := e.(map[string]any); ok {
			fmt.Fprintf(w, "%s: HTTP %d %v: %v\n", prefix, status, m["code"], m["message"])
			if d, ok := m["details"].(map[string]any); ok {
				if vs, ok := d["violations"].([]any); ok {
					for _, v := range vs {
						if vm, ok := v.(map[string]any); ok {
							fmt.Fprintf(w, "    %v: %v\n", vm["path"], vm["message"])
						}
					}
				}
			}
		}
	}
	if len(errs) == 0 {
		fmt.Fprintf(w, "%s: HTTP %d\n", prefix, status)
	}
	return true
}

// callTool makes one call: brain call leads.create '{"name": "Ann", "phone": "0412 345 678"}'.
func callTool(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the receipt (0 to return at once)")
	key := fs.String("key", "", "your key for this request: a retry with the same key (within 24 h) answers the first call's receipt and never runs it again (one is made up when none is given, so a try the brain could not answer is sent again)")
	device := fs.String("device", "", "the device the call must run on (docs/devices.md)")
	deviceWait := fs.Duration("device-wait", 0, "how long the call waits for its device to be connected (default the executor's GEM_DEVICE_WAIT)")
	asJSON := fs.Bool("json", false, "print the API's JSON answer")
	client := clientFrom(fs, getenv)
	tool, rest := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		tool, rest = args[0], args[1:]
	}
	input := "{}"
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		input, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return flagExit(err)
	}
	if tool == "" {
		fmt.Fprintln(stderr, "usage: brain call TOOL [INPUT_JSON] [-wait 30s] [-key KEY] [-device NAME [-device-wait 30s]] [-json]")
		return 2
	}
	if !json.Valid([]byte(input)) {
		fmt.Fprintf(stderr, "brain call: the input is not valid JSON: %s\n", input)
		return 2
	}
	if *key == "" {
		*key = "cli-call-" + uuid.NewString() // sent again while the brain cannot answer, it is the same call
	}
	req := map[string]any{"tool": tool, "input": json.RawMessage(input), "wait_timeout_ms": wait.Milliseconds(), "idempotency_key": *key}
	if *device != "" {
		req["device"] = *device
	}
	if *deviceWait > 0 {
		req["device_wait_ms"] = deviceWait.Milliseconds()
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait+15*time.Second)
	defer cancel()
	body, ok := printBody(ctx, client(), http.MethodPost, "/calls", req, true, "brain call", *asJSON, printCallAnswer, stdout, stderr)
	if !ok {
		return 1
	}
	if ok, _ := body["ok"].(bool); !ok {
		return 1
	}
	return 0
}

// skillFiles finds SKILL.md files: DIR/SKILL.md, or DIR/*/SKILL.md.
func skillFiles(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "SKILL.md")); err == nil {
		return []string{filepath.Join(dir, "SKILL.md")}, nil
	}
	matches, err := filepath.Glob(filepath.Join(dir, "*", "SKILL.md"))
	if err != nil {
		return nil, err
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("no SKILL.md in %s or its subfolders", dir)
	}
	return matches, nil
}

// readSkillFolder reads the folder of a SKILL.md as an import request: SKILL.md as content, every other
// regular file (but __MACOSX, .DS_Store and .git) by its path in the folder, as text when it is UTF-8 text
// and as base64 otherwise.
func readSkillFolder(skillFile string) (*brain.SkillImportParams, error) {
	content, err := os.ReadFile(skillFile)
	if err != nil {
		return nil, err
	}
	req := &brain.SkillImportParams{Source: skillFile, Content: string(content)}
	dir := filepath.Dir(skillFile)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == "." || rel == brain.SkillFileName:
			return nil
		case brain.SkippedSkillEntry(rel):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file (a link?); copy the file into the skill folder", path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		file := brain.SkillImportFile{Path: rel}
		if brain.IsText(data) {
			text := string(data)
			file.Content = &text
		} else {
			encoded := base64.StdEncoding.EncodeToString(data)
			file.ContentBase64 = &encoded
		}
		req.Files = append(req.Files, file)
		return nil
	})
	return req, err
}

// importSkills imports Agent Skills folders through the brain (which checks their tools against the registry).
func importSkills(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the API's JSON answers, one per skill, as a list")
	client := clientFrom(fs, getenv)
	dirs, err := parseInterleaved(fs, args)
	if err != nil || len(dirs) == 0 {
		fmt.Fprintln(stderr, "usage: brain skills import DIR... [-json]")
		return flagExit(err)
	}
	failed := 0
	answers := []map[string]any{}
	defer func() {
		if *asJSON {
			printIndented(stdout, encoded(answers))
		}
	}()
	for _, dir := range dirs {
		files, err := skillFiles(dir)
		if err != nil {
			fmt.Fprintln(stderr, "brain skills import:", err)
			failed++
			continue
		}
		for _, f := range files {
			req, err := readSkillFolder(f)
			if err != nil {
				fmt.Fprintln(stderr, "brain skills import:", err)
				failed++
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			var body map[string]any
			status, err := client().Do(ctx, http.MethodPost, "/skills/import", req, &body)
			cancel()
			if err != nil {
				fmt.Fprintln(stderr, "brain skills import:", err)
				return 1
			}
			if *asJSON {
				answers = append(answers, map[string]any{"file": f, "status": status, "answer": body})
				if status >= 300 {
					failed++
				}
				continue
			}
			if apiError(stdout, f, status, body) {
				failed++
				continue
			}
			skill, _ := body["skill"].(map[string]any)
			stored, _ := body["files"].([]any)
			fmt.Fprintf(stdout, "imported %v from %s: tools %v, %d more files\n", skill["slug"], f, skill["tools"], len(stored))
			if notes, _ := body["notes"].([]any); len(notes) > 0 {
				for _, n := range notes {
					fmt.Fprintf(stdout, "  note: %v\n", n)
				}
			}
		}
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// ingestLore makes one agentskillspack.LoreIngest call per Markdown or text file under DIR and reports each receipt.
func ingestLore(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(stderr, "usage: brain lore ingest DIR [-collection NAME]")
		return 2
	}
	dir := args[0]
	flags := flag.NewFlagSet("lore ingest", flag.ContinueOnError)
	flags.SetOutput(stderr)
	collection := flags.String("collection", "", "lore collection (default the tool's)")
	asJSON := flags.Bool("json", false, "print each file's answer (its call and receipt, or the errors) as JSON, in a list")
	client := clientFrom(flags, getenv)
	if err := flags.Parse(args[1:]); err != nil {
		return flagExit(err)
	}
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != dir {
			return filepath.SkipDir
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".md", ".markdown", ".txt":
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(stderr, "brain lore ingest:", err)
		return 1
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "brain lore ingest: no .md, .markdown or .txt files in %s\n", dir)
		return 1
	}
	failed := 0
	answers := []map[string]any{}
	out := stdout
	if *asJSON {
		out = io.Discard // the lines for a person; the list goes to stdout at the end
		defer func() { printIndented(stdout, encoded(answers)) }()
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(stderr, "brain lore ingest:", err)
			failed++
			continue
		}
		rel, _ := filepath.Rel(dir, f)
		input := agentskillspack.IngestLoreInput{Source: filepath.ToSlash(rel), Text: string(text), Collection: *collection}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		var raw json.RawMessage
		status, err := client().Do(ctx, http.MethodPost, "/calls", map[string]any{"tool": agentskillspack.LoreIngest, "input": input, "wait_timeout_ms": 60000}, &raw)
		cancel()
		if err != nil {
			fmt.Fprintln(stderr, "brain lore ingest:", err)
			return 1
		}
		answers = append(answers, map[string]any{"file": filepath.ToSlash(rel), "status": status, "answer": raw})
		var body struct {
			OK      bool              `json:"ok"`
			Receipt *registry.Receipt `json:"receipt"`
			Errors  []any             `json:"errors"`
		}
		_ = json.Unmarshal(raw, &body)
		switch {
		case status >= 300:
			var answer map[string]any
			_ = json.Unmarshal(raw, &answer)
			apiError(out, rel, status, answer)
			failed++
		case body.Receipt == nil:
			fmt.Fprintf(out, "%s: still running (no receipt within a minute)\n", rel)
			failed++
		case body.Receipt.Status != registry.StatusSucceeded:
			fmt.Fprintf(out, "%s: %s %s: %s\n", rel, body.Receipt.Status, body.Receipt.Error.Code, body.Receipt.Error.Message)
			failed++
		default:
			var doc agentskillspack.LoreDocument
			_ = json.Unmarshal(body.Receipt.Result, &doc)
			fmt.Fprintf(out, "%s: %s, version %d, %d chunks\n", rel, doc.Status, doc.Version, doc.ChunkCount)
		}
	}
	fmt.Fprintf(out, "%d of %d files ingested\n", len(files)-failed, len(files))
	if failed > 0 {
		return 1
	}
	return 0
}

// devicesCommand manages devices: brain devices [list], add NAME [-owner WHO] [-grant P,P], grant NAME -grant
// P,P, remove NAME, token NAME.
func devicesCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	sub, name, args := splitCommand(args, "list")
	fs := flag.NewFlagSet("devices "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	owner := fs.String("owner", "", "who the device belongs to (add)")
	grant := fs.String("grant", "", "permissions its tools may declare, comma-separated (add: default *; grant)")
	asJSON := fs.Bool("json", false, "print the API's JSON answer")
	client := clientFrom(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	usage := func() int {
		fmt.Fprintln(stderr, "usage: brain devices [list] | add NAME [-owner WHO] [-grant P,P] | grant NAME -grant P,P | remove NAME | token NAME [-json]")
		return 2
	}
	var method, path string
	var req any
	switch sub {
	case "list":
		if name != "" {
			method, path = http.MethodGet, "/devices/"+url.PathEscape(name)
		} else {
			method, path = http.MethodGet, "/devices"
		}
	case "add":
		if name == "" {
			return usage()
		}
		body := map[string]any{"name": name, "owner": *owner}
		if *grant != "" {
			body["permissions"] = splitList(*grant)
		}
		method, path, req = http.MethodPost, "/devices", body
	case "grant":
		if name == "" || *grant == "" {
			return usage()
		}
		method, path, req = http.MethodPatch, "/devices/"+url.PathEscape(name), map[string]any{"permissions": splitList(*grant)}
	case "remove":
		if name == "" {
			return usage()
		}
		method, path = http.MethodDelete, "/devices/"+url.PathEscape(name)
	case "token":
		if name == "" {
			return usage()
		}
		method, path = http.MethodPost, "/devices/"+url.PathEscape(name)+"/token"
	default:
		fmt.Fprintf(stderr, "brain devices: unknown command %q%s\n", sub, didYouMean("brain devices ", sub, []string{"list", "add", "grant", "remove", "token"}))
		return usage()
	}
	return callAPI(client(), method, path, req, "brain devices "+sub, *asJSON, stdout, stderr)
}

// callersCommand manages callers and their permissions (docs/governance.md): brain callers [list [NAME]],
// add NAME -grant P,P [-agents A,B] [-note TEXT], grant NAME [-grant P,P] [-agents A,B|*] [-note TEXT],
// revoke NAME, token NAME, enable NAME.
func callersCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	sub, name, args := splitCommand(args, "list")
	fs := flag.NewFlagSet("callers "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	grant := fs.String("grant", "", "permissions, comma-separated: read:db, send:*, * (add, grant)")
	agents := fs.String("agents", "", "the only agents it may act as, comma-separated; * for any (add, grant)")
	note := fs.String("note", "", "what the caller is for (add, grant)")
	asJSON := fs.Bool("json", false, "print the API's JSON answer")
	client := clientFrom(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	usage := func() int {
		fmt.Fprintln(stderr, "usage: brain callers [list [NAME]] | add NAME -grant P,P [-agents A,B] [-note TEXT] | grant NAME [-grant P,P] [-agents A,B|*] [-note TEXT] | revoke NAME | token NAME | enable NAME [-json]")
		return 2
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	body := map[string]any{}
	if given["grant"] {
		body["permissions"] = splitList(*grant)
	}
	if given["agents"] {
		if strings.TrimSpace(*agents) == "*" {
			body["agents"] = nil
		} else {
			body["agents"] = splitList(*agents)
		}
	}
	if given["note"] {
		body["note"] = *note
	}
	var method, path string
	var req any
	switch sub {
	case "list":
		method, path = http.MethodGet, "/callers"
		if name != "" {
			path += "/" + url.PathEscape(name)
		}
	case "add":
		if name == "" || !given["grant"] {
			return usage()
		}
		body["name"] = name
		method, path, req = http.MethodPost, "/callers", body
	case "grant":
		if name == "" || len(body) == 0 {
			return usage()
		}
		method, path, req = http.MethodPatch, "/callers/"+url.PathEscape(name), body
	case "revoke":
		if name == "" {
			return usage()
		}
		method, path = http.MethodDelete, "/callers/"+url.PathEscape(name)
	case "token":
		if name == "" {
			return usage()
		}
		method, path = http.MethodPost, "/callers/"+url.PathEscape(name)+"/token"
	case "enable":
		if name == "" {
			return usage()
		}
		method, path = http.MethodPost, "/callers/"+url.PathEscape(name)+"/enable"
	default:
		fmt.Fprintf(stderr, "brain callers: unknown command %q%s\n", sub, didYouMean("brain callers ", sub, []string{"list", "add", "grant", "revoke", "token", "enable"}))
		return usage()
	}
	return callAPI(client(), method, path, req, "brain callers "+sub, *asJSON, stdout, stderr)
}

// splitCommand takes "SUB [NAME] [flags]" apart: the subcommand (def when none is given), the name or id
// after it, and the flags.
func splitCommand(args []string, def string) (sub, name string, rest []string) {
	sub, rest = firstArg(args)
	if sub == "" {
		sub = def
	}
	name, rest = firstArg(rest)
	return sub, name, rest
}

// callAPI sends one request, prints the answer (its JSON with asJSON) and returns the command's exit status:
// 0 when ok.
func callAPI(c *cliClient, method, path string, req any, label string, asJSON bool, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, ok := printBody(ctx, c, method, path, req, false, label, asJSON, printAnswer, stdout, stderr)
	if !ok {
		return 1
	}
	if ok, _ := out["ok"].(bool); !ok {
		return 1
	}
	return 0
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	out := []string{}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// approvalsCommand lists and decides calls awaiting approval (docs/governance.md#approvals): brain approvals
// [list], approve CALL_ID [-reason TEXT], reject CALL_ID -reason TEXT.
func approvalsCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	sub, id, args := splitCommand(args, "list")
	fs := flag.NewFlagSet("approvals "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	reason := fs.String("reason", "", "why (required to reject; recorded with the decision)")
	asJSON := fs.Bool("json", false, "print the API's JSON answer")
	client := clientFrom(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	usage := func() int {
		fmt.Fprintln(stderr, "usage: brain approvals [list] | approve CALL_ID [-reason TEXT] | reject CALL_ID -reason TEXT [-json]")
		return 2
	}
	var method, path string
	var req any
	switch sub {
	case "list":
		if id != "" {
			return usage()
		}
		method, path = http.MethodGet, "/approvals"
	case "approve", "reject":
		if id == "" || (sub == "reject" && *reason == "") {
			return usage()
		}
		method, path, req = http.MethodPost, "/calls/"+url.PathEscape(id)+"/"+sub, map[string]any{"reason": *reason}
	default:
		fmt.Fprintf(stderr, "brain approvals: unknown command %q%s\n", sub, didYouMean("brain approvals ", sub, []string{"list", "approve", "reject"}))
		return usage()
	}
	return callAPI(client(), method, path, req, "brain approvals "+sub, *asJSON, stdout, stderr)
}

// printEvent prints one event of a run as a line: its number, kind and data.
func printEvent(w io.Writer, e api.Event) {
	var data bytes.Buffer
	if json.Compact(&data, e.Data) != nil {
		data.Write(e.Data)
	}
	fmt.Fprintf(w, "  %3d %-22s %s\n", e.ID, e.Kind, data.String())
}

// textIndent starts a line of the text a model writes, as brain chat prints it.
const textIndent = "      │ "

// turnPrinter prints a turn's events as they come, a line each, and the text the model writes as it streams
// (its text events) under the llm_started it follows: a new llm_started (another attempt, the next step)
// starts its text again.
type turnPrinter struct {
	w      io.Writer
	inText bool // a line of text is open
}

func (p *turnPrinter) print(e api.Event) {
	if e.Kind == "text" {
		var d struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(e.Data, &d)
		if !p.inText {
			fmt.Fprint(p.w, textIndent)
			p.inText = true
		}
		fmt.Fprint(p.w, strings.ReplaceAll(d.Text, "\n", "\n"+textIndent))
		return
	}
	p.endText()
	printEvent(p.w, e)
}

// endText ends an open line of text.
func (p *turnPrinter) endText() {
	if p.inText {
		fmt.Fprintln(p.w)
		p.inText = false
	}
}

// chatMessage sends an agent a message and prints its turn as it runs: brain chat AGENT MESSAGE.
func chatMessage(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	session := fs.String("session", "", "go on with this session (a new one when empty)")
	user := fs.String("user", "cli", "the user the agent speaks for (its user_id)")
	key := fs.String("key", "", "idempotency key: a retry with it answers the same turn (one is made up when none is given, so a stream that breaks is resumed)")
	asJSON := fs.Bool("json", false, "print the turn's JSON response (its events go to stderr)")
	timeout := waitFlag(10 * time.Minute)
	fs.Var(&timeout, "timeout", "how long to wait for the turn (a duration)")
	client := clientFrom(fs, getenv)
	agent, rest := firstArg(args)
	words, err := parseInterleaved(fs, rest) // brain chat AGENT MESSAGE -session ID: the flags after the words too
	if err != nil {
		return flagExit(err)
	}
	message := strings.Join(words, " ")
	if agent == "" || strings.TrimSpace(message) == "" {
		fmt.Fprintln(stderr, "usage: brain chat AGENT MESSAGE [-session ID] [-user ID] [-key K] [-json]")
		return 2
	}
	c := client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeout))
	defer cancel()
	if *key == "" {
		*key = "cli-chat-" + uuid.NewString() // the same turn when the stream is opened again (its brain went away)
	}
	events := &turnPrinter{w: stdout}
	if *asJSON {
		events.w = stderr
	}
	var resp *brain.ChatResponse
	var raw json.RawMessage
	status, refused, err := c.ChatStream(ctx, agent, &brain.ChatParams{Message: message, UserID: *user, SessionID: *session, IdempotencyKey: *key},
		func(e api.Event) error {
			if e.Kind == "response" {
				events.endText()
				raw, resp = e.Data, &brain.ChatResponse{}
				return json.Unmarshal(e.Data, resp)
			}
			events.print(e)
			return nil
		})
	if refused != nil {
		var body map[string]any
		_ = json.Unmarshal(refused, &body)
		if apiError(stdout, "brain chat", status, body) {
			tokenHint(stderr, status, c.tokenSource)
			return 1
		}
		// Answered in JSON with no stream: a repeated request's turn, as it was sent.
		raw, resp = refused, &brain.ChatResponse{}
		err = json.Unmarshal(refused, resp)
	}
	events.endText()
	if err != nil || resp == nil {
		fmt.Fprintln(stderr, "brain chat: the stream ended without the turn's response:", err)
		return 1
	}
	if *asJSON {
		var out bytes.Buffer
		_ = json.Indent(&out, raw, "", "  ")
		fmt.Fprintln(stdout, out.String())
	} else {
		mark := "ok"
		if !resp.OK {
			mark = "NOT OK"
		}
		fmt.Fprintf(stdout, "\n%s  run %s  session %s  %s\n\n%s\n", mark, resp.RunID, resp.SessionID, resp.Status, resp.Reply)
		for _, e := range resp.Errors {
			fmt.Fprintf(stdout, "  error %s: %s\n", e.Code, e.Message)
		}
	}
	if resp.OK {
		return 0
	}
	return 1
}
