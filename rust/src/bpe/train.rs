//! TODO(owner): see lib.rs module map.
