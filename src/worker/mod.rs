//! Workers: their packages (`worker.yaml`, and those bundled in the binary), the one launch site of
//! every kind (`launch`), the shim that runs and contains each attempt, the Landlock sandbox that
//! confines it, whether it is alive (`liveness`), their memory, the toolbox they talk back through,
//! telling their processes from others (`peer`), and
//! where attempts run (`runner`: here, or elsewhere through a runner such as a batch cluster's).

pub mod acp;
pub mod bundled;
pub mod filter;
pub mod launch;
pub mod liveness;
pub mod memory;
pub mod package;
pub mod peer;
pub mod process;
pub mod runner;
pub mod sandbox;
pub mod shim;
pub mod toolbox;

pub use package::{expand_home, pass_env, project_workers_dir, Catalog, Checkout, Manifest, Package, Protocol, SandboxSpec, Source};
