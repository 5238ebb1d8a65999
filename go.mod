module github.com/nats-io/nats-server/v2

go 1.26.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/klauspost/compress v1.20.0
	github.com/minio/highwayhash v1.0.4
	github.com/nats-io/jwt/v2 v2.8.2
	github.com/nats-io/nats.go v1.55.0
	github.com/nats-io/nkeys v0.4.17
	github.com/nats-io/nuid v1.0.1
	golang.org/x/crypto v0.59.0
)

require golang.org/x/sys v0.50.0 // indirect
