//! Typed methods, in the manner of `lsp-types`: each request names its `METHOD`, `Params`
//! and `Result`; each notification its `METHOD` and `Params`.
//!
//! [`TypedRequest`], [`TypedNotification`] and [`TypedResultResponse`] are the full
//! JSON-RPC envelopes of one method (the `method` member is checked on input), and
//! [`MethodCall`] is the `{method, params}` pair that MCP 2026-07-28 embeds in
//! `inputRequests`.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::jsonrpc::{RequestId, Version};

/// A JSON-RPC request method with typed params and result.
pub trait Request: 'static {
    /// The spec's name stem: `"CallTool"` names `CallToolRequest`, `CallToolResult`, ...
    const NAME: &'static str;
    /// The method name on the wire, e.g. `"tools/call"`.
    const METHOD: &'static str;
    /// Whether the schema requires `params`. When `false`, `Params` is an `Option`.
    const PARAMS_REQUIRED: bool = true;
    /// The `params` member.
    type Params: Serialize + DeserializeOwned + JsonSchema + fmt::Debug + Clone + PartialEq + Send;
    /// The `result` member of a successful response.
    type Result: Serialize + DeserializeOwned + JsonSchema + fmt::Debug + Clone + PartialEq + Send;
}

/// A JSON-RPC notification method with typed params.
pub trait Notification: 'static {
    /// The spec's name stem: `"Cancelled"` names `CancelledNotification`.
    const NAME: &'static str;
    /// The method name on the wire, e.g. `"notifications/cancelled"`.
    const METHOD: &'static str;
    /// Whether the schema requires `params`. When `false`, `Params` is an `Option`.
    const PARAMS_REQUIRED: bool = true;
    /// The `params` member.
    type Params: Serialize + DeserializeOwned + JsonSchema + fmt::Debug + Clone + PartialEq + Send;
}

/// Declares a request method type: `request!(CallTool, "tools/call", CallToolRequestParams => CallToolResult)`.
/// Add `optional` before the params type when the schema lets `params` be omitted
/// (then the params type must be an `Option`).
#[macro_export]
macro_rules! request {
    ($(#[$m:meta])* $name:ident, $method:expr, optional $params:ty => $result:ty) => {
        $crate::request!(@emit $(#[$m])* $name, $method, false, $params, $result);
    };
    ($(#[$m:meta])* $name:ident, $method:expr, $params:ty => $result:ty) => {
        $crate::request!(@emit $(#[$m])* $name, $method, true, $params, $result);
    };
    (@emit $(#[$m:meta])* $name:ident, $method:expr, $req:expr, $params:ty, $result:ty) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {}
        impl $crate::method::Request for $name {
            const NAME: &'static str = stringify!($name);
            const METHOD: &'static str = $method;
            const PARAMS_REQUIRED: bool = $req;
            type Params = $params;
            type Result = $result;
        }
    };
}

/// Declares a notification method type: `notification!(Cancelled, "notifications/cancelled", CancelledNotificationParams)`.
#[macro_export]
macro_rules! notification {
    ($(#[$m:meta])* $name:ident, $method:expr, optional $params:ty) => {
        $crate::notification!(@emit $(#[$m])* $name, $method, false, $params);
    };
    ($(#[$m:meta])* $name:ident, $method:expr, $params:ty) => {
        $crate::notification!(@emit $(#[$m])* $name, $method, true, $params);
    };
    (@emit $(#[$m:meta])* $name:ident, $method:expr, $req:expr, $params:ty) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {}
        impl $crate::method::Notification for $name {
            const NAME: &'static str = stringify!($name);
            const METHOD: &'static str = $method;
            const PARAMS_REQUIRED: bool = $req;
            type Params = $params;
        }
    };
}

/// The `method` member of a typed envelope: serializes as `M`'s method name and refuses
/// any other name on input.
struct MethodName<'a>(&'a str);

impl Serialize for MethodName<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

fn check_method<E: serde::de::Error>(got: &str, want: &str) -> Result<(), E> {
    if got == want {
        Ok(())
    } else {
        Err(E::custom(format_args!(
            "expected method {want:?}, got {got:?}"
        )))
    }
}

/// True when `value` serializes as JSON `null` (an absent optional `params`).
pub(crate) fn serializes_as_none<T: Serialize>(value: &T) -> bool {
    value.serialize(NoneProbe).is_ok()
}

/// A serializer that succeeds only on `None`/unit, used by [`serializes_as_none`].
struct NoneProbe;

#[derive(Debug)]
struct NotNone;
impl fmt::Display for NotNone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not none")
    }
}
impl std::error::Error for NotNone {}
impl serde::ser::Error for NotNone {
    fn custom<T: fmt::Display>(_: T) -> Self {
        NotNone
    }
}

macro_rules! probe_fail {
    ($($f:ident($($t:ty),*)),*) => {$(
        fn $f(self $(, _: $t)*) -> Result<(), NotNone> { Err(NotNone) }
    )*};
}

impl Serializer for NoneProbe {
    type Ok = ();
    type Error = NotNone;
    type SerializeSeq = serde::ser::Impossible<(), NotNone>;
    type SerializeTuple = serde::ser::Impossible<(), NotNone>;
    type SerializeTupleStruct = serde::ser::Impossible<(), NotNone>;
    type SerializeTupleVariant = serde::ser::Impossible<(), NotNone>;
    type SerializeMap = serde::ser::Impossible<(), NotNone>;
    type SerializeStruct = serde::ser::Impossible<(), NotNone>;
    type SerializeStructVariant = serde::ser::Impossible<(), NotNone>;
    fn serialize_none(self) -> Result<(), NotNone> {
        Ok(())
    }
    probe_fail!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str)
    );
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), NotNone> {
        Err(NotNone)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotNone> {
        Err(NotNone)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotNone> {
        Err(NotNone)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotNone> {
        Err(NotNone)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotNone> {
        Err(NotNone)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotNone> {
        Err(NotNone)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotNone> {
        Err(NotNone)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotNone> {
        Err(NotNone)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NotNone> {
        Err(NotNone)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotNone> {
        Err(NotNone)
    }
}

fn envelope_schema(
    generator: &mut SchemaGenerator,
    method: &str,
    with_id: bool,
    with_jsonrpc: bool,
    params: Option<(Schema, bool)>,
) -> Schema {
    let mut props = serde_json::Map::new();
    let mut required = Vec::new();
    if with_id {
        props.insert(
            "id".into(),
            generator.subschema_for::<RequestId>().to_value(),
        );
        required.push("id");
    }
    if with_jsonrpc {
        props.insert(
            "jsonrpc".into(),
            json_schema!({"type": "string", "const": "2.0"}).to_value(),
        );
        required.push("jsonrpc");
    }
    props.insert(
        "method".into(),
        json_schema!({"type": "string", "const": method}).to_value(),
    );
    required.push("method");
    if let Some((schema, req)) = params {
        props.insert("params".into(), schema.to_value());
        if req {
            required.push("params");
        }
    }
    json_schema!({"type": "object", "properties": props, "required": required})
}

/// The params schema of a method: the params type itself, without the `null` that an
/// `Option` adds (an absent member is expressed by leaving it out of `required`).
fn params_schema<P: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    let schema = generator.subschema_for::<P>();
    strip_null(schema)
}

fn strip_null(schema: Schema) -> Schema {
    let mut value = schema.to_value();
    if let Some(obj) = value.as_object_mut() {
        if let Some(any_of) = obj.get("anyOf").and_then(|v| v.as_array()).cloned() {
            let non_null: Vec<_> = any_of
                .into_iter()
                .filter(|s| s.get("type").and_then(|t| t.as_str()) != Some("null"))
                .collect();
            if non_null.len() == 1 && obj.len() == 1 {
                return Schema::try_from(non_null[0].clone()).unwrap_or(schema_true());
            }
        }
        if let Some(types) = obj.get_mut("type").and_then(|t| t.as_array_mut()) {
            types.retain(|t| t.as_str() != Some("null"));
        }
    }
    Schema::try_from(value).unwrap_or(schema_true())
}

fn schema_true() -> Schema {
    Schema::from(true)
}

/// A request of method `M`, with its JSON-RPC envelope: `{jsonrpc, id, method, params}`.
#[derive(Debug, Clone, PartialEq)]
pub struct TypedRequest<M: Request> {
    /// The id the response will carry.
    pub id: RequestId,
    /// The method's parameters.
    pub params: M::Params,
}

impl<M: Request> TypedRequest<M> {
    /// A request of method `M` with this id and these parameters.
    pub fn new(id: impl Into<RequestId>, params: M::Params) -> Self {
        TypedRequest {
            id: id.into(),
            params,
        }
    }
}

#[derive(Serialize)]
struct RequestOut<'a, P: Serialize> {
    jsonrpc: Version,
    id: &'a RequestId,
    method: MethodName<'a>,
    #[serde(skip_serializing_if = "serializes_as_none")]
    params: &'a P,
}

#[derive(Deserialize)]
#[serde(bound = "P: DeserializeOwned")]
struct RequestIn<P> {
    #[allow(dead_code)]
    jsonrpc: Version,
    id: RequestId,
    method: String,
    params: P,
}

impl<M: Request> Serialize for TypedRequest<M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RequestOut {
            jsonrpc: Version,
            id: &self.id,
            method: MethodName(M::METHOD),
            params: &self.params,
        }
        .serialize(s)
    }
}

impl<'de, M: Request> Deserialize<'de> for TypedRequest<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RequestIn::<M::Params>::deserialize(d)?;
        check_method(&r.method, M::METHOD)?;
        Ok(TypedRequest {
            id: r.id,
            params: r.params,
        })
    }
}

impl<M: Request> JsonSchema for TypedRequest<M> {
    fn schema_name() -> Cow<'static, str> {
        format!("{}Request", M::NAME).into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let params = params_schema::<M::Params>(g);
        envelope_schema(g, M::METHOD, true, true, Some((params, M::PARAMS_REQUIRED)))
    }
}

/// A notification of method `N`, with its envelope: `{jsonrpc, method, params}`.
#[derive(Debug, Clone, PartialEq)]
pub struct TypedNotification<N: Notification> {
    /// The method's parameters.
    pub params: N::Params,
}

impl<N: Notification> TypedNotification<N> {
    /// A notification of method `N` with these parameters.
    pub fn new(params: N::Params) -> Self {
        TypedNotification { params }
    }
}

#[derive(Serialize)]
struct NotificationOut<'a, P: Serialize> {
    jsonrpc: Version,
    method: MethodName<'a>,
    #[serde(skip_serializing_if = "serializes_as_none")]
    params: &'a P,
}

#[derive(Deserialize)]
#[serde(bound = "P: DeserializeOwned")]
struct NotificationIn<P> {
    #[allow(dead_code)]
    jsonrpc: Version,
    method: String,
    params: P,
}

impl<N: Notification> Serialize for TypedNotification<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        NotificationOut {
            jsonrpc: Version,
            method: MethodName(N::METHOD),
            params: &self.params,
        }
        .serialize(s)
    }
}

impl<'de, N: Notification> Deserialize<'de> for TypedNotification<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = NotificationIn::<N::Params>::deserialize(d)?;
        check_method(&n.method, N::METHOD)?;
        Ok(TypedNotification { params: n.params })
    }
}

impl<N: Notification> JsonSchema for TypedNotification<N> {
    fn schema_name() -> Cow<'static, str> {
        format!("{}Notification", N::NAME).into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let params = params_schema::<N::Params>(g);
        envelope_schema(
            g,
            N::METHOD,
            false,
            true,
            Some((params, N::PARAMS_REQUIRED)),
        )
    }
}

/// The `{method, params}` pair of a request with no JSON-RPC envelope: the shape of each
/// value in MCP 2026-07-28 `inputRequests`.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodCall<M: Request> {
    /// The method's parameters.
    pub params: M::Params,
    /// Members besides `method` and `params`, kept as they came.
    pub extra: crate::JsonObject,
}

impl<M: Request> MethodCall<M> {
    /// A call of method `M` with these parameters and no extra members.
    pub fn new(params: M::Params) -> Self {
        MethodCall {
            params,
            extra: crate::JsonObject::new(),
        }
    }
}

#[derive(Serialize)]
struct CallOut<'a, P: Serialize> {
    method: MethodName<'a>,
    #[serde(skip_serializing_if = "serializes_as_none")]
    params: &'a P,
    #[serde(flatten)]
    extra: &'a crate::JsonObject,
}

#[derive(Deserialize)]
#[serde(bound = "P: DeserializeOwned")]
struct CallIn<P> {
    method: String,
    params: P,
    #[serde(flatten)]
    extra: crate::JsonObject,
}

impl<M: Request> Serialize for MethodCall<M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        CallOut {
            method: MethodName(M::METHOD),
            params: &self.params,
            extra: &self.extra,
        }
        .serialize(s)
    }
}

impl<'de, M: Request> Deserialize<'de> for MethodCall<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let c = CallIn::<M::Params>::deserialize(d)?;
        check_method(&c.method, M::METHOD)?;
        Ok(MethodCall {
            params: c.params,
            extra: c.extra,
        })
    }
}

impl<M: Request> JsonSchema for MethodCall<M> {
    fn schema_name() -> Cow<'static, str> {
        format!("{}Request", M::NAME).into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let params = params_schema::<M::Params>(g);
        envelope_schema(
            g,
            M::METHOD,
            false,
            false,
            Some((params, M::PARAMS_REQUIRED)),
        )
    }
}

/// A successful response to a request of method `M`: `{jsonrpc, id, result}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct TypedResultResponse<M: Request> {
    /// Always `"2.0"`.
    pub jsonrpc: Version,
    /// The id of the request this answers.
    pub id: RequestId,
    /// The method's result.
    pub result: M::Result,
    #[serde(skip)]
    _method: PhantomData<M>,
}

impl<M: Request> TypedResultResponse<M> {
    /// A response with this id carrying `result`.
    pub fn new(id: impl Into<RequestId>, result: M::Result) -> Self {
        TypedResultResponse {
            jsonrpc: Version,
            id: id.into(),
            result,
            _method: PhantomData,
        }
    }
}

impl<M: Request> JsonSchema for TypedResultResponse<M> {
    fn schema_name() -> Cow<'static, str> {
        format!("{}ResultResponse", M::NAME).into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let id = g.subschema_for::<RequestId>().to_value();
        let result = g.subschema_for::<M::Result>().to_value();
        json_schema!({
            "type": "object",
            "properties": {
                "jsonrpc": {"type": "string", "const": "2.0"},
                "id": id,
                "result": result,
            },
            "required": ["id", "jsonrpc", "result"],
        })
    }
}
