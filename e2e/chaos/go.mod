module github.com/mcplive/adapter/e2e/chaos

go 1.26.0

require (
	github.com/mcplive/adapter/e2e/internal/exampleproc v0.0.0-00010101000000-000000000000
	github.com/mcplive/adapter/e2e/internal/loadkit v0.0.0-00010101000000-000000000000
	github.com/modelcontextprotocol/go-sdk v1.8.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.37.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	golang.org/x/tools v0.52.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace (
	github.com/mcplive/adapter/e2e/internal/exampleproc => ../internal/exampleproc
	github.com/mcplive/adapter/e2e/internal/loadkit => ../internal/loadkit
)
