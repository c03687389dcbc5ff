module example.com/acme-pickfirst

go 1.26.0

require google.golang.org/grpc v1.85.0

require (
	golang.org/x/sys v0.48.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
