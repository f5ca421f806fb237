package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// testTimeout bounds the whole scenario, browser start included.
const testTimeout = 2 * time.Minute

// screenshotPath is where the page's screenshot is kept, for CI to keep
// as an artefact: .ci/artifacts of the repository, which git ignores.
var screenshotPath = filepath.Join("..", "..", ".ci", "artifacts", "debug-live.png")

// TestLivePageFollowsAWrite opens GET /debug/live of the example in
// headless Chromium, then, as an agent, subscribes to a customer and
// renames it with a tool. The page must show the subscription, then the
// re-run and the notification, without a reload: a value the test left on
// the page's window survives, and the page counts the events it applied.
func TestLivePageFollowsAWrite(t *testing.T) {
	browserPath := chromium(t)
	// The example's base URL, http://127.0.0.1:PORT: the page and the MCP
	// endpoint are paths under it.
	base := strings.TrimSuffix(example.StartHTTP(t), "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	agent := newMCPClient(t, base+"/mcp")
	agent.initialize(t, ctx)
	streamCtx, endStream := context.WithCancel(ctx)
	defer endStream()
	updated := agent.listen(t, streamCtx)

	page, problems := openBrowser(t, ctx, browserPath)
	run(t, page, "open the page", chromedp.Navigate(base+"/debug/live"))
	waitFor(t, page, "the page follows the registry", `document.getElementById("status").className === "ok"`)
	run(t, page, "mark the window", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`window.mcpliveMarker = "set before the write"; true`)(ctx, tg)
		return err
	}))

	agent.call(t, ctx, "resources/subscribe", map[string]any{"uri": "app://customers_show/1"})
	row := `tr[data-command="customers_show"][data-arguments='{"id":1}']`
	waitFor(t, page, "the subscription shows", cellIs(row, "td.subscribers", "1")+" && "+cellIs(row, "td.reruns", "0"))

	agent.call(t, ctx, "tools/call", map[string]any{"name": "customers_update", "arguments": map[string]any{"id": 1, "name": "Ada King"}})
	select {
	case uri := <-updated:
		if uri != "app://customers_show/1" {
			t.Errorf("notified for %q", uri)
		}
	case <-ctx.Done():
		t.Fatal("the agent heard no notification after the write")
	}
	waitFor(t, page, "the re-run shows", cellIs(row, "td.reruns", "1")+" && "+cellIs("", "#notified", "1"))

	marker, err := chromedp.Run(page, chromedp.Evaluate[string](`String(window.mcpliveMarker)`))
	if err != nil || marker != "set before the write" {
		t.Errorf("the page was reloaded: the window's marker is %q (%v)", marker, err)
	}
	if updates, err := chromedp.Run(page, chromedp.Evaluate[int](`Number(document.body.dataset.updates)`)); err != nil || updates < 3 {
		t.Errorf("the page applied %d events (%v), want at least 3: the first, the subscription, the re-run", updates, err)
	}
	saveScreenshot(t, page)
	if p := problems.list(); len(p) > 0 {
		t.Errorf("the page logged errors (a Content-Security-Policy violation, a script error):\n%s", strings.Join(p, "\n"))
	}
}

// openBrowser starts headless Chromium with the flags this machine needs
// (no sandbox as root; no background networking, which the closed network
// refuses) and a fresh profile, and returns a tab and what it logs as
// errors. Both end with the test.
func openBrowser(t *testing.T, ctx context.Context, path string) (context.Context, *consoleProblems) {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	problems := &consoleProblems{}
	page, cancelPage := chromedp.NewContext(alloc, chromedp.WithListener(problems.listen))
	t.Cleanup(func() {
		cancelPage()
		cancelAlloc()
	})
	return page, problems
}

func run(t *testing.T, page context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(page, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitFor waits until the JavaScript expression holds on the page.
func waitFor(t *testing.T, page context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(page, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		html, _ := chromedp.Run(page, chromedp.Evaluate[string](`document.getElementById("live").innerHTML`))
		t.Fatalf("%s: %v; the live section:\n%s", what, err, html)
	}
}

// cellIs is a JavaScript expression: the text of the cell that selector
// cell finds in the row that selector row finds ("" for the document) is
// want.
func cellIs(row, cell, want string) string {
	sel, _ := json.Marshal(strings.TrimSpace(row + " " + cell))
	w, _ := json.Marshal(want)
	return fmt.Sprintf(`document.querySelector(%s)?.textContent === %s`, sel, w)
}

func saveScreenshot(t *testing.T, page context.Context) {
	t.Helper()
	png, err := chromedp.Run(page, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	if err := os.MkdirAll(filepath.Dir(screenshotPath), 0o755); err == nil {
		err = os.WriteFile(screenshotPath, png, 0o644)
	}
	if err != nil {
		t.Errorf("keeping the screenshot: %v", err)
		return
	}
	abs, _ := filepath.Abs(screenshotPath)
	t.Logf("screenshot of the page: %s", abs)
}

// consoleProblems collects what the page logs as an error: uncaught
// exceptions, console.error, and the browser's own error entries, such as
// a Content-Security-Policy violation.
type consoleProblems struct {
	mu   sync.Mutex
	seen []string
}

// listen is a chromedp listener: it runs on the tab's reading goroutine,
// so it only records.
func (p *consoleProblems) listen(ev any) {
	var problem string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		problem = "exception: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			problem += " " + e.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError {
			problem = "console.error"
			for _, a := range e.Args {
				problem += " " + string(a.Value)
			}
		}
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			problem = "browser log (" + string(e.Entry.Source) + "): " + e.Entry.Text
		}
	}
	if problem != "" {
		p.mu.Lock()
		p.seen = append(p.seen, problem)
		p.mu.Unlock()
	}
}

func (p *consoleProblems) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}
