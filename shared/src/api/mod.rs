//! The public HTTP contract as types: every request and response body, the route table entry
//! type with each route's authorisation, and (in [`spec`]) the OpenAPI document generated from
//! them. Adding a route is: its bodies here, a [`Route`] in its handler's `ROUTES`, the handler,
//! and its `#[utoipa::path]` operation in [`spec`]. Tests check that the document, the handlers'
//! route tables and `template.yaml` agree.

pub mod after_sale;
pub mod body;
pub mod campaigns;
pub mod fields;
pub mod orders;
pub mod payments;
pub mod reservations;
pub mod spec;
pub mod stock;
pub mod stripe;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// Anyone, no token.
    Public,
    /// Any valid JWT; its `sub` is the user.
    User,
    /// A valid JWT carrying this scope.
    Scope(&'static str),
    /// No token; the body carries an HMAC signature in `X-Signature` (the payment webhook).
    Signed,
}

/// One HTTP route: API Gateway's route key (`METHOD /path/{param}`) and its authorisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub key: &'static str,
    pub auth: Auth,
}

impl Route {
    pub const fn new(key: &'static str, auth: Auth) -> Self {
        Route { key, auth }
    }
}

/// The scope of the admin routes.
pub const SCOPE_ADMIN: &str = "stock:admin";
/// The scopes of a buyer's token: reading their orders and availability, and checking out or
/// cancelling.
pub const SCOPE_ORDERS_READ: &str = "orders:read";
pub const SCOPE_ORDERS_WRITE: &str = "orders:write";
/// The scope of the reservation routes other order systems call.
pub const SCOPE_RESERVATIONS: &str = "reservations:write";
