package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gemhq/gem/brain/chat"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// screenshotDir is where the browser test saves its screenshots: GEM_STUDIO_SCREENSHOTS when set (make
// test sets .gem/studio-screenshots), else the test's artifact directory (kept with go test -artifacts).
func screenshotDir(t *testing.T) string {
	if dir := os.Getenv("GEM_STUDIO_SCREENSHOTS"); dir != "" {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		return dir
	}
	return t.ArtifactDir()
}

// headlessChromium starts Debian's Chromium (installed by .ci/run) headless, with the flags a machine
// without a network needs. The test fails, never skips, without it.
func headlessChromium(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("GEM_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	require.NotEmpty(t, path, "the studio's browser test needs Chromium: apt-get install chromium (.ci/run does), or set GEM_CHROMIUM")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelTimeout)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "Chromium did not start")
	return ctx
}

// browserSteps drives one tab and names each failure by its step.
type browserSteps struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string
}

func (b *browserSteps) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, actions...), step)
}

// submit submits the form with id form, which loads another page, and waits until the JavaScript condition
// ready holds on it. A query of the DOM, as chromedp.WaitVisible makes, that runs while the page is replaced
// can fail with "Could not find node with given id"; a condition evaluated on whichever page is there
// cannot.
func (b *browserSteps) submit(step, form, ready string) {
	b.t.Helper()
	b.do(step, chromedp.Submit(chromedp.ID(form)))
	b.until(step, ready)
}

// until waits for a JavaScript condition on the page, across the page reloading under it.
func (b *browserSteps) until(step, expression string) {
	b.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expression))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			require.Failf(b.t, "condition never held", "%s: %s (last error: %v)", step, expression, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *browserSteps) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(b.t, err, "text of %s", sel)
	return s
}

func (b *browserSteps) location() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	require.NoError(b.t, err)
	return strings.TrimPrefix(loc, b.base)
}

// shot saves a screenshot of the whole page.
func (b *browserSteps) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err, "screenshot %s", name)
	path := filepath.Join(b.dir, name+".png")
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
	b.t.Logf("screenshot: %s", path)
}

// open navigates to a studio page and waits for it.
func (b *browserSteps) open(path, ready string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS(ready)))
}

// TestStudioInBrowser drives the studio in headless Chromium as an operator would: log in, create and
// edit a skill (a bad slug shows the API's message by the field), assign it to a new agent, chat with the
// agent and see its turn's steps and calls arrive as they happen (the turn's event stream) and its reply
// fill in as the model writes it, approve a held call, watch a receipt arrive live, and find a failed call
// by filter. It saves a screenshot of each page.
func TestStudioInBrowser(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	e, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	fake := llmfake.NewOpenAI(t, fakeKey,
		llmfake.Turn{Calls: []llmfake.Call{{ID: "call_note", Name: "os__create_note",
			Arguments: `{"domain": "business", "title": "Call Dana back", "content": "about the roof quote"}`}}},
		// The reply streams in two pieces 2 s apart: the pending reply shows the first meanwhile.
		llmfake.Turn{Chunks: []string{"I noted to call Dana back", " about the roof quote."}, Gap: 2 * time.Second})
	m, err := startBrain(dbURL, func(c *Config) {
		c.LLM = llmconfig.Config{Provider: llmconfig.ProviderOpenAI, BaseURL: fake.URL + "/v1", APIKey: fakeKey, Model: "fake-model"}
		c.Chat = chat.Config{}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	a := &testAPI{t: t, url: m.Server.URL(), token: testToken}
	ctx := context.Background()
	// Calls of os.list_reminders wait for a person's approval.
	_, err = pool.Exec(ctx, `INSERT INTO core_approval_policies (permission, expires_ms, note) VALUES ('read:reminders', 600000, 'studio test')`)
	require.NoError(t, err)

	b := &browserSteps{t: t, ctx: headlessChromium(t), base: m.Server.URL(), dir: screenshotDir(t)}

	// Log in: a wrong token is refused on the page; the right one opens the studio where it was going.
	b.do("login page", chromedp.Navigate(b.base+"/studio/skills"), chromedp.WaitVisible(chromedp.ID("token")))
	require.Equal(t, "/studio/login?next=%2Fstudio%2Fskills", b.location())
	b.shot("01-login")
	b.do("wrong token", chromedp.SendKeys(chromedp.ID("token"), "not-the-token-0123456789"))
	b.submit("wrong token", "login-form", `document.getElementById("login-error") !== null`)
	require.Equal(t, "That token is not valid.", b.text("#login-error"))
	b.do("log in", chromedp.SendKeys(chromedp.ID("token"), testToken))
	b.submit("log in", "login-form", `location.pathname === "/studio/skills" && document.getElementById("new-skill") !== null`)
	require.Equal(t, "/studio/skills", b.location())
	require.Equal(t, "tester", b.text("#caller"))

	// Create a skill: a bad slug gets the API's message next to the slug field; then a good one.
	skill := uniq("studio-skill")
	b.do("bad skill", chromedp.SendKeys(chromedp.CSS(`#new-skill [name=slug]`), "Not A Slug!"),
		chromedp.SendKeys(chromedp.CSS(`#new-skill [name=name]`), "Follow-ups"),
		chromedp.SendKeys(chromedp.CSS(`#new-skill [name=description]`), "Notes what to follow up."),
		chromedp.SendKeys(chromedp.CSS(`#new-skill [name=instructions]`), "Write a note for each follow-up."),
		chromedp.SendKeys(chromedp.CSS(`#new-skill [name=tools]`), "os.create_note"),
		chromedp.Click(chromedp.CSS(`#new-skill button[type=submit]`)))
	b.until("slug error shown", `document.querySelector('#new-skill .field-error[data-for="slug"]').classList.contains('shown')`)
	slugError := b.text(`#new-skill .field-error[data-for="slug"]`)
	require.NotEmpty(t, slugError)
	b.shot("02-skills-validation")
	b.do("good skill", chromedp.SetValue(chromedp.CSS(`#new-skill [name=slug]`), skill),
		chromedp.Click(chromedp.CSS(`#new-skill button[type=submit]`)), chromedp.WaitVisible(chromedp.ID("edit-skill")))
	require.Equal(t, "/studio/skills/"+skill, b.location())

	// Edit it: the page reloads with the new description, stored by the API.
	b.do("edit skill", chromedp.SetValue(chromedp.CSS(`#edit-skill [name=description]`), "Notes every follow-up, edited."),
		chromedp.Click(chromedp.CSS(`#edit-skill button[type=submit]`)))
	b.until("edited", `document.querySelector('#edit-skill [name=description]').defaultValue === 'Notes every follow-up, edited.'`)
	var got map[string]any
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/skills/"+skill, nil, &got))
	require.Equal(t, "Notes every follow-up, edited.", got["skill"].(map[string]any)["description"])
	b.shot("03-skill")

	// A new agent, and the skill assigned to it.
	agent := uniq("studio-agent")
	b.open("/studio/agents", "#new-agent")
	b.do("new agent", chromedp.SendKeys(chromedp.CSS(`#new-agent [name=slug]`), agent),
		chromedp.SendKeys(chromedp.CSS(`#new-agent [name=name]`), "Studio Assistant"),
		chromedp.SendKeys(chromedp.CSS(`#new-agent [name=instructions]`), "You help a roofing business."),
		chromedp.Click(chromedp.CSS(`#new-agent button[type=submit]`)), chromedp.WaitVisible(chromedp.ID("assign-skill")))
	require.Equal(t, "/studio/agents/"+agent, b.location())
	b.do("assign", chromedp.SetValue(chromedp.CSS(`#assign-skill [name=skill]`), skill),
		chromedp.Click(chromedp.CSS(`#assign-skill button[type=submit]`)))
	b.until("assigned", fmt.Sprintf(`!!document.querySelector('#assignments tr[data-skill=%q]')`, skill))
	require.Contains(t, b.text(fmt.Sprintf(`#assignments tr[data-skill=%q]`, skill)), "available")
	require.Contains(t, b.text("#agent-tools"), "os.create_note")
	b.shot("04-agent")

	// Chat with it: the agent's call appears with its receipt, then its reply.
	b.open("/studio/chat?agent="+agent, "#chat-form")
	b.do("chat", chromedp.SendKeys(chromedp.ID("chat-message"), "remind me to call Dana back about the quote"),
		chromedp.Click(chromedp.CSS(`#chat-form button`)))
	b.until("text as it is written", `document.querySelector('#transcript .msg.pending .text')?.textContent === 'I noted to call Dana back'`)
	b.shot("05-chat-writing")
	b.until("reply", `!document.querySelector('#transcript .msg.pending') &&
		document.querySelector('#transcript').innerText.includes('I noted to call Dana back about the roof quote.')`)
	calls := b.text("#chat-calls")
	require.Contains(t, calls, "os.create_note")
	require.Contains(t, calls, "succeeded")
	// The turn was streamed: its steps, as its run's events told them, stay under the reply.
	steps := b.text("#transcript .steps")
	require.Contains(t, steps, "asking the model (step 1)")
	require.Contains(t, steps, "calling os.create_note")
	require.Contains(t, steps, "os.create_note succeeded")
	require.Contains(t, steps, "asking the model (step 2)")
	b.shot("05-chat")

	// Approve a held call: it runs, and its receipt is written.
	var held callResponse
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/calls", map[string]any{"tool": "os.list_reminders", "input": map[string]any{}}, &held))
	require.NotNil(t, held.Call)
	require.Equal(t, "awaiting_approval", string(held.Call.Status))
	row := fmt.Sprintf(`#approvals tr[data-id=%q]`, held.Call.ID.String())
	b.open("/studio/approvals", row)
	b.shot("06-approvals")
	b.do("reject without reason", chromedp.Click(chromedp.CSS(row+` form.reject button`)))
	b.until("reason required", fmt.Sprintf(`document.querySelector('%s form.reject .field-error[data-for="reason"]').classList.contains('shown')`, row))
	b.do("approve", chromedp.SendKeys(chromedp.CSS(row+` form.approve [name=reason]`), "looked fine"),
		chromedp.Click(chromedp.CSS(row+` form.approve button`)))
	b.until("approved", fmt.Sprintf(`!document.querySelector('#approvals tr[data-id=%q]')`, held.Call.ID.String()))
	require.Eventually(t, func() bool {
		var r callResponse
		a.do(http.MethodGet, "/calls/"+held.Call.ID.String(), nil, &r)
		return r.Receipt != nil && r.Receipt.Status == "succeeded"
	}, 15*time.Second, 100*time.Millisecond)

	// Watch a receipt arrive live on the calls page.
	b.open("/studio/calls", "#calls")
	b.until("stream open", `document.querySelector('#live-state').classList.contains('on')`)
	live := a.call("os.create_note", map[string]any{"domain": "business", "title": "Live one", "content": "watch it arrive"})
	b.until("live row", fmt.Sprintf(`!!document.querySelector('#calls tr[data-id=%q]')`, live.Call.ID.String()))
	require.Contains(t, b.text(fmt.Sprintf(`#calls tr[data-id=%q]`, live.Call.ID.String())), "succeeded")
	b.shot("07-calls-live")

	// A failed call (a plain SQL insert with bad input), found by the status filter.
	var failedID string
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ('os.create_note', '{"title": 5}') RETURNING id`).Scan(&failedID))
	require.Eventually(t, func() bool {
		var st string
		_ = pool.QueryRow(ctx, `SELECT status FROM core_calls WHERE id = $1`, failedID).Scan(&st)
		return st == "failed"
	}, 15*time.Second, 50*time.Millisecond)
	b.do("filter failed", chromedp.SetValue(chromedp.CSS(`#call-filter [name=status]`), "failed"))
	b.submit("filter failed", "call-filter", fmt.Sprintf(`location.search.includes("status=failed") && document.querySelector('#calls tr[data-id=%q]') !== null`, failedID))
	require.Contains(t, b.location(), "status=failed")
	require.NotContains(t, b.text("#calls"), "succeeded", "the filter keeps only failed calls")
	b.shot("08-calls-failed")
	b.do("open failed call", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#calls tr[data-id=%q] a.mono`, failedID))),
		chromedp.WaitVisible(chromedp.ID("receipt-error")))
	require.Contains(t, b.text("#call-status"), "failed")
	b.shot("09-call-failed")

	// Every other page renders (and is saved for a look).
	for i, p := range []struct{ path, ready string }{
		{"/studio/calls/" + live.Call.ID.String(), "#receipt-result"},
		{"/studio/runs", "#runs"},
		{"/studio/agents", "#agents"},
		{"/studio/skills", "#skill-graph"},
		{"/studio/registry", "#tools"},
		{"/studio/registry/os.create_note", "#input-schema"},
		{"/studio/executors", "#executors"},
		{"/studio/architecture", "#q-available"},
	} {
		b.open(p.path, p.ready)
		b.shot(fmt.Sprintf("%02d-%s", 10+i, strings.NewReplacer("/studio/", "", "/", "-").Replace(p.path)))
	}
	b.open("/studio/registry", "#tools")
	require.Contains(t, b.text("#tools"), "os.create_note")
	b.open("/studio/runs", "#runs")
	b.do("open run", chromedp.Click(chromedp.CSS(`#runs tbody tr a`)), chromedp.WaitVisible(chromedp.ID("run-status")))
	b.shot("18-run")
}
