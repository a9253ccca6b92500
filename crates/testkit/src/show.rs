//! `show --json` read the way the older pki tests expect it (shared by pki_cli and
//! pki_interop).

use serde_json::Value;

/// `show --json` (schema tlskit.show/1: an array per kind of item) in the shape these
/// tests were written for: the one item, or an array of the items in file order.
pub fn show_items(v: Value) -> Value {
    let mut items: Vec<Value> = [
        "certificates",
        "requests",
        "public_keys",
        "private_keys",
        "crls",
    ]
    .iter()
    .flat_map(|k| v[*k].as_array().cloned().unwrap_or_default())
    .collect();
    items.sort_by_key(|i| i["index"].as_u64());
    if items.len() == 1 {
        items.pop().unwrap_or_default()
    } else {
        Value::Array(items)
    }
}
