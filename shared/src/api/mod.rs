//! The public HTTP contract as types: every request and response body, the route table entry
//! type with each route's authorisation, and (in [`spec`]) the OpenAPI document generated from
//! them. Adding a route is: its bodies here, a row in its handler's `ROUTES` (`handlers::routes`), the handler,
//! and its `#[utoipa::path]` operation in [`spec`]. Tests check that the document, the handlers'
//! route tables and `template.yaml` agree.

pub mod after_sale;
pub mod body;
pub mod campaigns;
pub mod codes;
pub mod fields;
pub mod ledger;
pub mod orders;
pub mod payments;
pub mod queue;
pub mod reservations;
pub mod sale;
pub mod spec;
pub mod stock;
pub mod stripe;
pub mod waitlist;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// Anyone, no token.
    Public,
    /// Any valid JWT; its `sub` is the user.
    User,
    /// A valid JWT carrying this scope.
    Scope(&'static str),
    /// A valid JWT carrying any one of these scopes (API Gateway's `AuthorizationScopes` list,
    /// in this order): an admin route's own scope, then [`SCOPE_ADMIN`].
    AnyScope(&'static [&'static str]),
    /// No token; the body carries an HMAC signature in the header the named OpenAPI security
    /// scheme describes ([`spec::SIGNATURE`], [`spec::STRIPE_SIGNATURE`]): a payment webhook.
    Signed(&'static str),
}

impl Auth {
    /// The scopes of which a token needs one (empty: none in particular, or no token at all).
    pub fn scopes(&self) -> Vec<&'static str> {
        match self {
            Auth::Scope(s) => vec![*s],
            Auth::AnyScope(s) => s.to_vec(),
            Auth::Public | Auth::User | Auth::Signed(_) => vec![],
        }
    }
}

/// Every admin route (security review L7): an identity provider grants each back-office role
/// only the scopes it needs (docs/deploy.md, "Scopes"). `stock:admin` is still accepted on every
/// admin route, for tokens issued before the split; grant it to no new client.
pub const SCOPE_ADMIN: &str = "stock:admin";
/// The catalogue: SKU create/update (prices, shards, models), pause/resume, campaigns (their
/// windows, prices, quotas and kill switches).
pub const SCOPE_CATALOGUE: &str = "stock:catalogue";
/// Stock levels: audited adjustments and the stock journal.
pub const SCOPE_STOCK_ADJUST: &str = "stock:adjust";
/// Code pools: uploading code batches and the pool's counts.
pub const SCOPE_CODES: &str = "stock:codes";
/// Customer service: the admin order view, shipping, returns received, admin cancels.
pub const SCOPE_ORDERS_ADMIN: &str = "orders:admin";
/// The `AuthorizationScopes` of each kind of admin route: its own scope or [`SCOPE_ADMIN`].
pub const ADMIN_CATALOGUE: &[&str] = &[SCOPE_CATALOGUE, SCOPE_ADMIN];
pub const ADMIN_STOCK_ADJUST: &[&str] = &[SCOPE_STOCK_ADJUST, SCOPE_ADMIN];
pub const ADMIN_CODES: &[&str] = &[SCOPE_CODES, SCOPE_ADMIN];
pub const ADMIN_ORDERS: &[&str] = &[SCOPE_ORDERS_ADMIN, SCOPE_ADMIN];
/// The scopes of a buyer's token: reading their orders and availability, and checking out or
/// cancelling.
pub const SCOPE_ORDERS_READ: &str = "orders:read";
pub const SCOPE_ORDERS_WRITE: &str = "orders:write";
/// The scope of the reservation routes other order systems call.
pub const SCOPE_RESERVATIONS: &str = "reservations:write";
