//! `--device`: one spelling for every command, `cpu`, `cuda` or `cuda:N`.
//!
//! Each command reads the flag as the device it needs: libtorch's for
//! `dv align` and `dv evaluate`, dv-speak's for `dv synth`. Every one is
//! parsed as a [`DeviceArg`] first ([`parse`]), so the spelling and the
//! message for a misspelling are the same everywhere, and a value a command
//! cannot use (`dv synth --device cuda:1`) is refused by clap, which names
//! the flag and the value, before anything runs.

use std::fmt::{self, Display};
use std::str::FromStr;

use dv_torch::tch;

/// A `--device` value as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeviceArg {
    /// `cpu`.
    Cpu,
    /// `cuda` (`None`: the command's default GPU) or `cuda:N`.
    Cuda(Option<usize>),
}

impl FromStr for DeviceArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu" => Ok(Self::Cpu),
            "cuda" => Ok(Self::Cuda(None)),
            _ => match s.strip_prefix("cuda:").map(str::parse) {
                Some(Ok(n)) => Ok(Self::Cuda(Some(n))),
                _ => Err("not cpu, cuda or cuda:N".into()),
            },
        }
    }
}

impl Display for DeviceArg {
    /// The spelling [`FromStr`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cpu => f.write_str("cpu"),
            Self::Cuda(None) => f.write_str("cuda"),
            Self::Cuda(Some(n)) => write!(f, "cuda:{n}"),
        }
    }
}

/// clap's parser for a `--device` whose command needs a `T`: the value as a
/// [`DeviceArg`], then converted; a value `T` cannot hold is refused with
/// the conversion's reason.
pub(crate) fn parse<T>(s: &str) -> Result<T, String>
where
    T: TryFrom<DeviceArg>,
    T::Error: Display,
{
    T::try_from(s.parse::<DeviceArg>()?).map_err(|e| e.to_string())
}

/// libtorch's device, as `[train] device` reads the same text
/// (`dv_train::device_of`): `cuda` is GPU 0, or the CPU when libtorch sees
/// no GPU.
impl From<DeviceArg> for tch::Device {
    fn from(d: DeviceArg) -> Self {
        match d {
            DeviceArg::Cpu => tch::Device::Cpu,
            DeviceArg::Cuda(None) => tch::Device::cuda_if_available(),
            DeviceArg::Cuda(Some(n)) => tch::Device::Cuda(n),
        }
    }
}

/// dv-speak's sampler device: the CPU, or `cuda`, GPU 0 (dv-gpu's kernel 1
/// runs there only, so `cuda:N` is refused).
impl TryFrom<DeviceArg> for dv_speak::Device {
    type Error = String;

    fn try_from(d: DeviceArg) -> Result<Self, Self::Error> {
        match d {
            DeviceArg::Cpu => Ok(dv_speak::Device::Cpu),
            DeviceArg::Cuda(None) => Ok(dv_speak::Device::Cuda),
            DeviceArg::Cuda(Some(_)) => Err("the GPU sampler runs on GPU 0 only: cpu or cuda".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses_and_round_trips() {
        for (text, want) in [
            ("cpu", DeviceArg::Cpu),
            ("cuda", DeviceArg::Cuda(None)),
            ("cuda:0", DeviceArg::Cuda(Some(0))),
            ("cuda:7", DeviceArg::Cuda(Some(7))),
        ] {
            assert_eq!(text.parse::<DeviceArg>().unwrap(), want, "{text}");
            assert_eq!(want.to_string(), text);
        }
        for bad in ["", "gpu", "CPU", "Cuda", "cuda:", "cuda:x", "cuda:-1", "cuda:1.0", "cuda0", "0"] {
            assert_eq!(bad.parse::<DeviceArg>().unwrap_err(), "not cpu, cuda or cuda:N", "{bad:?}");
        }
    }

    #[test]
    fn libtorch_reads_it_as_train_device_does() {
        for text in ["cpu", "cuda", "cuda:0", "cuda:3"] {
            let ours = parse::<tch::Device>(text).unwrap();
            assert_eq!(ours, dv_train::device_of(text).unwrap(), "{text}");
        }
    }

    #[test]
    fn synth_takes_cpu_and_cuda_only() {
        assert_eq!(parse::<dv_speak::Device>("cpu"), Ok(dv_speak::Device::Cpu));
        assert_eq!(parse::<dv_speak::Device>("cuda"), Ok(dv_speak::Device::Cuda));
        for gpu_n in ["cuda:0", "cuda:1"] {
            assert_eq!(
                parse::<dv_speak::Device>(gpu_n).unwrap_err(),
                "the GPU sampler runs on GPU 0 only: cpu or cuda"
            );
        }
        assert_eq!(parse::<dv_speak::Device>("gpu").unwrap_err(), "not cpu, cuda or cuda:N");
    }
}
