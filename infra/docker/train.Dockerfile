# syntax=docker/dockerfile:1
# The training image: CUDA runtime, the torch wheel, dv (release) and what
# dv recipe needs (festival and sox for the embedded corpus, the recipes,
# run configs and the shipped G2P model under /opt/deepvoice-rs).
# Build from the repository root:
#
#   docker build -f infra/docker/train.Dockerfile -t deepvoice-rs/train:latest .
#
# The install steps are infra/install.sh's, the same that infra/run (the
# README's commands) runs: ensure_apt, ensure_python, install_dv.
# dv links libtorch from the wheel by an rpath into the venv, so the build
# and the runtime stage share /opt/venv on the same base.
#
# Where no registry can be reached (the dev VM, CI), the same file builds with
# podman from a Debian base (infra/docker/base.sh train: python3, no CUDA
# runtime; the wheel brings the CUDA libraries dv links) and a dv built on the
# host whose rpath names /opt/venv/lib/python3.11/site-packages/torch/lib,
# given as the build context dv-prefix (PREFIX/bin/dv, the voices), and the
# Python packages from the build context wheels (the host's `pip download` of
# ensure_python's pins: the builds' containers reach no index here):
#
#   podman build -f infra/docker/train.Dockerfile --build-arg CUDA_BASE=localhost/dv-base-apt:bookworm \
#       --build-arg DV=prebuilt --build-context dv-prefix=PREFIX --build-context wheels=WHEELHOUSE \
#       -t deepvoice-rs/train .
#
# infra/docker/test_images.sh --train does that.

ARG CUDA_BASE=nvidia/cuda:13.0.1-runtime-ubuntu24.04
# Where /opt/venv and /opt/dv come from: build (the build stage compiles dv) or
# prebuilt (the venv made here, dv from the build context dv-prefix).
ARG DV=build

FROM ${CUDA_BASE} AS build
ENV DEBIAN_FRONTEND=noninteractive PATH=/opt/venv/bin:/root/.cargo/bin:$PATH CARGO_TARGET_DIR=/build/target
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends ca-certificates curl build-essential pkg-config python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
RUN curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --default-toolchain stable
RUN python3 -m venv /opt/venv
WORKDIR /src
COPY infra/install.sh infra/install.sh
RUN infra/install.sh ensure_python
COPY . .
RUN infra/install.sh install_dv /opt/dv

FROM ${CUDA_BASE} AS prebuilt
LABEL io.github.deepvoice-rs.stage=prebuilt
ENV DEBIAN_FRONTEND=noninteractive PATH=/opt/venv/bin:$PATH
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends ca-certificates python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
WORKDIR /src
COPY infra/install.sh infra/install.sh
RUN --mount=type=bind,from=wheels,target=/wheels \
    PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheels PIP_NO_CACHE_DIR=1 infra/install.sh ensure_python
COPY --from=dv-prefix / /opt/dv/

FROM ${DV} AS dv

FROM ${CUDA_BASE}
ENV DEBIAN_FRONTEND=noninteractive PATH=/opt/venv/bin:$PATH DV_HOME=/dv
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends ca-certificates python3 \
 && rm -rf /var/lib/apt/lists/*
COPY infra/install.sh /opt/deepvoice-rs/infra/install.sh
RUN /opt/deepvoice-rs/infra/install.sh ensure_apt && rm -rf /var/lib/apt/lists/*
COPY --from=dv /opt/venv /opt/venv
COPY --from=dv /opt/dv/ /usr/local/
COPY infra/recipes /opt/deepvoice-rs/infra/recipes
COPY trainers/train/configs /opt/deepvoice-rs/trainers/train/configs
COPY trainers/train/models /opt/deepvoice-rs/trainers/train/models
RUN dv --version && dv doctor
WORKDIR /dv
ENTRYPOINT []
CMD ["dv", "--help"]
