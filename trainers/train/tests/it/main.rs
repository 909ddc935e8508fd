//! Integration tests of dv-train.

mod checkpoint;
mod collective;
mod features;
mod mlflow;
mod optim;
mod rendezvous;
mod run;
mod sampler;
mod wavenet;
