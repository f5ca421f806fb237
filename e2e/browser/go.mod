module github.com/mcplive/adapter/e2e/browser

go 1.26.0

require (
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
	github.com/mcplive/adapter/e2e/internal/exampleproc v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require (
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)

replace github.com/mcplive/adapter/e2e/internal/exampleproc => ../internal/exampleproc
