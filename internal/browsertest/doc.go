// Package browsertest drives headless Chromium over the DevTools protocol
// for tests of fairgrid's pages (the audit's HTML report, the front-ends'
// live page): find or install the browser (Debian's chromium through
// apt-get, as root; otherwise the test is skipped with the reason),
// open a page, load URLs, evaluate script, collect console problems and
// the requests the page made, take screenshots.
//
// It is a test helper: its functions take a *testing.T and fail or skip
// it. Chromium runs in its own process group and ends with the test.
package browsertest
