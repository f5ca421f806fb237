module github.com/mcplive/adapter/e2e/fleet

go 1.26.0

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/mark3labs/mcp-go v1.6.0
	github.com/mcplive/adapter/e2e/internal/exampleproc v0.0.0-00010101000000-000000000000
	github.com/mcplive/adapter/e2e/internal/loadkit v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require (
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/mcplive/adapter/pgfeed v0.1.0
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace (
	github.com/mcplive/adapter/e2e/internal/exampleproc => ../internal/exampleproc
	github.com/mcplive/adapter/e2e/internal/loadkit => ../internal/loadkit
)

replace github.com/mcplive/adapter/pgfeed => ../../pgfeed
