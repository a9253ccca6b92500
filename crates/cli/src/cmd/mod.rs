//! One module per command group.

pub(crate) mod doctor;
pub(crate) mod net;
pub(crate) mod pki;
pub(crate) mod store;
pub(crate) mod verify;
