//! Map values shared with the C programs: a struct's layout declared once
//! as (field, byte offset, byte size) — checked against the programs' BTF
//! in layout.rs — and the one encoder and decoder of such values, plus the
//! one way a loaded object's maps are found.

use libbpf_rs::{MapCore, MapHandle, Object};

use crate::EbpfError;

/// A C struct of unsigned integer fields: (field, offset, size) in order.
pub(crate) type Layout = [(&'static str, usize, usize)];

/// The bytes of a struct of `size` bytes whose fields hold `values`, in
/// the layout's order (each value cut to its field's size).
pub(crate) fn encode(layout: &Layout, size: usize, values: &[u64]) -> Vec<u8> {
    let mut out = vec![0u8; size];
    for ((_, off, len), v) in layout.iter().zip(values) {
        let bytes = v.to_ne_bytes();
        let field = if cfg!(target_endian = "little") {
            &bytes[..*len]
        } else {
            &bytes[8 - len..]
        };
        out[*off..off + len].copy_from_slice(field);
    }
    out
}

/// The fields of a struct, in the layout's order; None when `bytes` is
/// shorter than the struct.
pub(crate) fn decode(layout: &Layout, size: usize, bytes: &[u8]) -> Option<Vec<u64>> {
    if bytes.len() < size {
        return None;
    }
    Some(
        layout
            .iter()
            .map(|(_, off, len)| {
                let mut w = [0u8; 8];
                let field = &bytes[*off..off + len];
                if cfg!(target_endian = "little") {
                    w[..*len].copy_from_slice(field);
                } else {
                    w[8 - len..].copy_from_slice(field);
                }
                u64::from_ne_bytes(w)
            })
            .collect(),
    )
}

/// A handle of the loaded object's map `name`.
pub(crate) fn map(object: &Object, name: &'static str) -> Result<MapHandle, EbpfError> {
    let m = object
        .maps()
        .find(|m| m.name() == name)
        .ok_or_else(|| EbpfError::Load(format!("map {name} missing from the object")))?;
    MapHandle::try_from(&m).map_err(|e| EbpfError::map(name, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUT: [(&str, usize, usize); 3] = [("a", 0, 2), ("b", 4, 4), ("c", 8, 8)];

    #[test]
    fn round_trip() {
        let bytes = encode(&LAYOUT, 16, &[7, 0x0102_0304, u64::MAX - 1]);
        assert_eq!(bytes.len(), 16);
        assert_eq!(
            decode(&LAYOUT, 16, &bytes),
            Some(vec![7, 0x0102_0304, u64::MAX - 1])
        );
        assert_eq!(decode(&LAYOUT, 16, &bytes[..15]), None);
        // A value cut to its field.
        assert_eq!(
            decode(&LAYOUT, 16, &encode(&LAYOUT, 16, &[0x1_0005])).unwrap()[0],
            5
        );
    }
}
