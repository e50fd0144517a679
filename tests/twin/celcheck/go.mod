// The CEL library of the twin's kube-apiserver (k8s.io/apiserver v0.35.4 requires cel-go
// v0.26.0 and cel.dev/expr v0.24.0), for tests/unit: see celcheck.sh.
module gpushare.cluster/celcheck

go 1.24.0

require (
	cel.dev/expr v0.24.0
	github.com/antlr4-go/antlr/v4 v4.13.0
	github.com/google/cel-go v0.26.0
	github.com/stoewer/go-strcase v1.3.0
	golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56
	golang.org/x/text v0.31.0
	google.golang.org/genproto/googleapis/api v0.0.0-20250303144028-a0af3efb3deb
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250528174236-200df99c418a
	google.golang.org/protobuf v1.36.8
)
