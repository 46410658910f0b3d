//! Enums whose variants each have one stable name, written once: the one
//! macro, [`named_enum!`], that gives the library's named enums their names
//! (error kinds, RDMA port states, `nccl-env --check` ids, probe causes and
//! stages). The name method, `Display`, the list of names and (where the type
//! is serde data) the JSON value all come from the one table, so they cannot
//! disagree.
//!
//! It sits below every module (it uses none, and its expansion names only
//! `std` and `serde`), because `error.rs`, the bottom of the library, uses it
//! too.

/// Writes an enum from a table of `Variant = "name"` rows.
///
/// - `enum E (fn name) { A = "a", }`: a closed enum, `E::name(self)` (a
///   `const fn`), `Display` (the name, written as is), and `E::NAMES`, every
///   name in table order.
/// - `enum E (fn name, serde) { ... }`: the same, and each variant's serde
///   name (`#[serde(rename)]`, which the derived JSON schema follows) is its
///   name; the enum derives `Serialize`/`Deserialize` itself.
/// - `enum E (fn name, open "prefix") { A = 1 | 2 => "a", }`: a number's or a
///   text's name as the kernel prints it, and `E::Other(String)` for anything
///   outside the table (`"prefix 7"`, or the text itself): `from_number`,
///   `from_name`, `name(&self)`, `Display` (padded), `Deref<Target = str>`,
///   `From<&str>`, and serde as the name.
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $enum:ident (fn $method:ident, open $prefix:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $num:pat => $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $enum {
            $( $(#[$vmeta])* $variant, )*
            /// A number or name outside the kernel's table, as text.
            Other(String),
        }

        impl $enum {
            /// From the kernel's number (`ibv_port_attr`, the `N:` of the sysfs file).
            pub fn from_number(n: u32) -> $enum {
                match n {
                    $( $num => $enum::$variant, )*
                    n => $enum::Other(format!(concat!($prefix, " {}"), n)),
                }
            }
            /// From the name sysfs prints.
            pub fn from_name(s: &str) -> $enum {
                match s {
                    $( $text => $enum::$variant, )*
                    s => $enum::Other(s.to_string()),
                }
            }
            /// The name sysfs prints (or the `Other` text).
            pub fn $method(&self) -> &str {
                match self {
                    $( $enum::$variant => $text, )*
                    $enum::Other(s) => s,
                }
            }
        }

        impl std::fmt::Display for $enum {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.$method())
            }
        }

        /// Reads as its sysfs name (`state.as_deref()` is the text).
        impl std::ops::Deref for $enum {
            type Target = str;
            fn deref(&self) -> &str {
                self.$method()
            }
        }

        impl From<&str> for $enum {
            fn from(s: &str) -> $enum {
                $enum::from_name(s)
            }
        }

        impl serde::Serialize for $enum {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.$method())
            }
        }

        impl<'de> serde::Deserialize<'de> for $enum {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$enum, D::Error> {
                <String as serde::Deserialize>::deserialize(d).map(|s| $enum::from_name(&s))
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $enum:ident (fn $method:ident, serde) {
            $( $(#[doc = $doc:literal])* $variant:ident = $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(serde::Serialize, serde::Deserialize)]
        $vis enum $enum {
            $( $(#[doc = $doc])* #[serde(rename = $text)] $variant, )*
        }

        $crate::named::named_enum!(@names $enum $method $( $variant = $text, )*);
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $enum:ident (fn $method:ident) {
            $( $(#[doc = $doc:literal])* $variant:ident = $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        $vis enum $enum {
            $( $(#[doc = $doc])* $variant, )*
        }

        $crate::named::named_enum!(@names $enum $method $( $variant = $text, )*);
    };
    (@names $enum:ident $method:ident $( $variant:ident = $text:literal, )*) => {
        impl $enum {
            /// Every name, in the table's order.
            #[allow(dead_code)]
            pub(crate) const NAMES: &'static [&'static str] = &[$($text),*];

            #[doc = concat!("The stable name: one of" $(, " `", $text, "`")*, ".")]
            pub const fn $method(self) -> &'static str {
                match self {
                    $( $enum::$variant => $text, )*
                }
            }
        }

        impl std::fmt::Display for $enum {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.$method())
            }
        }
    };
}

pub(crate) use named_enum;

#[cfg(test)]
mod tests {
    crate::named::named_enum! {
        /// A closed test enum.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Plain (fn id) {
            /// One.
            One = "one",
            /// Two.
            Two = "two-2",
        }
    }

    crate::named::named_enum! {
        /// A serde test enum.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Data (fn name, serde) {
            /// Alpha.
            Alpha = "alpha",
            /// Beta.
            BetaGamma = "beta_gamma",
        }
    }

    crate::named::named_enum! {
        /// An open test enum.
        enum Open (fn name, open "thing") {
            /// 1 or 2.
            Low = 1 | 2 => "LOW",
            /// 9.
            High = 9 => "High Nine",
        }
    }

    #[test]
    fn one_table_gives_every_name() {
        assert_eq!(Plain::NAMES, ["one", "two-2"]);
        assert_eq!(Plain::Two.id(), "two-2");
        assert_eq!(format!("{}|{:>6}", Plain::One, Plain::One), "one|one");
        assert_eq!(Data::BetaGamma.name(), "beta_gamma");
        assert_eq!(
            serde_json::to_string(&Data::BetaGamma).unwrap(),
            "\"beta_gamma\""
        );
        let back: Data = serde_json::from_str("\"alpha\"").unwrap();
        assert_eq!(back, Data::Alpha);
        assert!(serde_json::from_str::<Data>("\"Alpha\"").is_err());
    }

    #[test]
    fn an_open_enum_keeps_what_is_outside_its_table() {
        assert_eq!(Open::from_number(2), Open::Low);
        assert_eq!(Open::from_number(7), Open::Other("thing 7".into()));
        assert_eq!(Open::from_name("High Nine"), Open::High);
        assert_eq!(Open::from("odd").name(), "odd");
        assert_eq!(format!("[{:>5}]", Open::Low), "[  LOW]");
        assert_eq!(&*Open::High, "High Nine");
        assert_eq!(serde_json::to_string(&Open::Low).unwrap(), "\"LOW\"");
        let back: Open = serde_json::from_str("\"x\"").unwrap();
        assert_eq!(back, Open::Other("x".into()));
    }
}
