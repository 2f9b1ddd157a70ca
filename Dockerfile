# syntax=docker/dockerfile:1
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/coachgw ./cmd/coachgw \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/fakellm ./cmd/fakellm \
 && mkdir -p /out/data

# A static binary needs nothing but CA certificates (for rediss:// and https model endpoints).
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/
COPY --from=build /out/coachgw /out/fakellm /usr/local/bin/
# The safety corpus, for `coachgw qualify --safety` run from the image (its default --corpus).
COPY --from=build /src/testdata/safety /usr/share/coachgw/safety
# The image has no home directory: without REDIS_URL, the embedded Redis saves its sessions here
# (mount a volume to keep them across containers).
COPY --from=build --chown=65532:65532 /out/data /data
ENV COACH_DATA_DIR=/data
VOLUME /data
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/coachgw"]
