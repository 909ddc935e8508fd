//! Integration tests of dv-train.

mod alignment;
mod checkpoint;
mod collective;
mod dropout;
mod duration;
mod features;
mod g2p;
mod init;
mod mlflow;
mod optim;
mod rendezvous;
mod run;
mod sampler;
mod tcp;
mod tracking;
mod wavenet;
