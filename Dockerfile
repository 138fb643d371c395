# The operator image: `kubectl etcd install --image <this image>` deploys it.
#
#   docker build -t example.com/kubectl-etcd:0.1.0 .      (or: buildah bud -t ... .)
#
# Build stage: etcd-client needs protoc at build time.
FROM rust:1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends protobuf-compiler libprotobuf-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin kubectl-etcd

# Runtime: glibc + CA certificates, no shell; runs as the distroless "nonroot" user.
FROM gcr.io/distroless/cc-debian12
COPY --from=build /src/target/release/kubectl-etcd /usr/local/bin/kubectl-etcd
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/kubectl-etcd"]
CMD ["operate"]
