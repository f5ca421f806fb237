// Package browser holds an end-to-end test of the example application's
// live page (GET /debug/live) in a real headless Chromium, driven with
// github.com/chromedp/chromedp: the page loads, follows the registry over
// server-sent events, and a write through a tool changes the re-run count
// on the page without a reload.
//
// It is a module of its own so that users of github.com/mcplive/adapter
// never inherit chromedp; it does not import the adapter at all. The test
// builds examples/customers from the repository root and talks to the
// binary over loopback. See README.md.
package browser
