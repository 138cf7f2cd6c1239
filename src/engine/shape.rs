//! One shape per field: how a field of the engine's model is written in a format of its own (a
//! store record, the backup file) and read back ([`Field`]), and [`mirror!`], which writes a
//! format's struct and both of its conversions from one field table.
//!
//! Each format keeps its own types, so the model is never serialised straight into storage (a
//! refactor of the model cannot move a stored byte: `tests/engine_shape.rs` and
//! `tests/browser_store_shapes.rs` pin every format). What is written once is the field list: a
//! `mirror!` table is the format's struct (names, types, serde attributes, docs) and the macro
//! derives `model -> format` (destructuring the model without `..`, so a field added to the model
//! fails to compile until the table has it) and `format -> model` (a struct literal, which fails
//! the same way) from it, each field through its [`Field`] impl. A field whose stored form differs
//! from the model's (a word for an enum, `u64` for a `usize`, a clamped number) says so by its
//! type in the table, and that type's `Field` impl is the one place the difference lives. An impl
//! is crate-wide (`Field<Role> for String` is the store's word for a role): a format that needs
//! another form of the same value gives it a type of its own (the backup's `wire_enum!` types),
//! and two impls for one pair fail to compile rather than pick one silently.
//!
//! Why a declarative macro and a trait rather than a derive crate: a table is plain Rust struct
//! syntax, no proc-macro joins the build, and the code it expands to is the field-by-field code
//! that was written by hand before (no runtime reflection, nothing added to the wasm start-up).
//! A shape that is not a mirror (a record with fields derived from the model, a flat message with
//! its meta, a document of registers) stays written out, destructuring without `..`, and uses
//! `Field` for its parts.
//!
//! Must not import anything outside `crate::engine` (serde is for the formats, not used here).

use std::collections::BTreeMap;

use crate::engine::model::FactKind;

/// A format's form of a model value `M`.
pub trait Field<M>: Sized {
    /// The stored form of `m`.
    fn put(m: &M) -> Self;
    /// The model's value; `Err` says what is wrong with the stored one (a word this build does not
    /// know, a number too large for this machine).
    fn take(self) -> Result<M, String>;
}

/// `r` read as the model's value, an error naming the field.
pub fn take<M, R: Field<M>>(field: &str, r: R) -> Result<M, String> {
    r.take().map_err(|e| format!("{field}: {e}"))
}

/// Types a format stores as the model has them.
macro_rules! same {
    ($($t:ty),* $(,)?) => {
        $(impl Field<$t> for $t {
            fn put(m: &$t) -> Self {
                m.clone()
            }
            fn take(self) -> Result<$t, String> {
                Ok(self)
            }
        })*
    };
}

same!(String, bool, u32, u64, i64, f32, FactKind);

impl<M, R: Field<M>> Field<Option<M>> for Option<R> {
    fn put(m: &Option<M>) -> Self {
        m.as_ref().map(R::put)
    }
    fn take(self) -> Result<Option<M>, String> {
        self.map(R::take).transpose()
    }
}

impl<M, R: Field<M>> Field<Vec<M>> for Vec<R> {
    fn put(m: &Vec<M>) -> Self {
        m.iter().map(R::put).collect()
    }
    fn take(self) -> Result<Vec<M>, String> {
        self.into_iter().map(R::take).collect()
    }
}

impl<M, R: Field<M>> Field<BTreeMap<String, M>> for BTreeMap<String, R> {
    fn put(m: &BTreeMap<String, M>) -> Self {
        m.iter().map(|(k, v)| (k.clone(), R::put(v))).collect()
    }
    fn take(self) -> Result<BTreeMap<String, M>, String> {
        self.into_iter().map(|(k, v)| Ok((k, v.take()?))).collect()
    }
}

/// A size (`usize` in the model) is stored as `u64`: the same on every machine.
impl Field<usize> for u64 {
    fn put(m: &usize) -> Self {
        *m as u64
    }
    fn take(self) -> Result<usize, String> {
        usize::try_from(self).map_err(|_| format!("{self} is too large"))
    }
}

/// A format's struct that mirrors a model struct field by field, and its conversions both ways
/// (see the module doc). The table is the struct as it would be written by hand, with `for Model`
/// after its name; every field of the model must be in it, under the model's name.
///
/// It implements [`Field<Model>`] for the struct (nested in another table, or read with
/// [`Field::take`]) and `From<&Model>`.
macro_rules! mirror {
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident for $model:ident {
            $( $(#[$fattr:meta])* $fvis:vis $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$attr])*
        $vis struct $name {
            $( $(#[$fattr])* $fvis $field: $ty ),*
        }

        impl $crate::engine::shape::Field<$model> for $name {
            fn put(m: &$model) -> Self {
                // Without `..`: a field added to the model fails to compile here until the
                // format's table has it.
                let $model { $($field),* } = m;
                $name { $($field: $crate::engine::shape::Field::put($field)),* }
            }
            fn take(self) -> Result<$model, String> {
                let $name { $($field),* } = self;
                Ok($model {
                    $($field: $crate::engine::shape::take(stringify!($field), $field)?),*
                })
            }
        }

        impl From<&$model> for $name {
            fn from(m: &$model) -> Self {
                $crate::engine::shape::Field::put(m)
            }
        }
    };
}

pub(crate) use mirror;
