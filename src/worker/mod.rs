//! Workers, in layers each naming only those below: process utilities (`process`, and `peer`:
//! telling a worker's processes from others) ← the shim that runs and contains each attempt ←
//! the runners that place it (`runner`: here, or elsewhere) ← the one launch site of every kind
//! (`launch`) and whether an attempt is alive (`liveness`). Beside them: packages (`worker.yaml`,
//! and those bundled in the binary), the Landlock sandbox, a package's filter commands, memory,
//! the ACP client and the toolbox workers talk back through.

pub mod acp;
pub(crate) mod attempt;
pub(crate) mod budget;
pub(crate) mod bundled;
pub(crate) mod checks;
pub(crate) mod filter;
pub mod launch;
pub(crate) mod limits;
pub(crate) mod live;
pub(crate) mod liveness;
pub mod memory;
pub(crate) mod observed_attempt;
pub mod package;
pub(crate) mod peer;
pub(crate) mod ports;
pub(crate) mod process;
pub(crate) mod reviewer;
pub mod roster;
pub mod runner;
pub mod sandbox;
pub(crate) mod session;
pub mod shim;
pub(crate) mod step;
pub mod toolbox;
pub mod usage;
pub(crate) mod workspace;

pub use package::{expand_home, pass_env, project_workers_dir, Catalog, Checkout, Manifest, Package, Protocol, SandboxSpec, Source};
