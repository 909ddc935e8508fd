//! Integration tests of dv-train.

mod checkpoint;
mod collective;
mod mlflow;
mod optim;
mod rendezvous;
mod run;
mod sampler;
