//! Integration tests of dv-train.

mod checkpoint;
mod collective;
mod mlflow;
mod optim;
mod run;
mod sampler;
