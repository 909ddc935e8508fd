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

ARG CUDA_BASE=nvidia/cuda:13.0.1-runtime-ubuntu24.04

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

FROM ${CUDA_BASE}
ENV DEBIAN_FRONTEND=noninteractive PATH=/opt/venv/bin:$PATH DV_HOME=/dv
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends ca-certificates python3 \
 && rm -rf /var/lib/apt/lists/*
COPY infra/install.sh /opt/deepvoice-rs/infra/install.sh
RUN /opt/deepvoice-rs/infra/install.sh ensure_apt && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/dv/ /usr/local/
COPY infra/recipes /opt/deepvoice-rs/infra/recipes
COPY trainers/train/configs /opt/deepvoice-rs/trainers/train/configs
COPY trainers/train/models /opt/deepvoice-rs/trainers/train/models
RUN dv --version && dv doctor
WORKDIR /dv
ENTRYPOINT []
CMD ["dv", "--help"]
