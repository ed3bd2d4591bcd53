//! An order as its owner and the after-sale changes see it: the errors a change to an existing
//! order answers with, and the owner's read. Below every service that changes an order (orders,
//! paying, after-sale, codes), so none of them needs another to name its errors.

use crate::context::App;
use crate::domain::order::{Order, OrderRecord};
use crate::domain::{OrderId, UserId};

#[derive(Debug, thiserror::Error)]
pub enum OrderError {
    #[error("no such order")]
    NotFound,
    #[error(transparent)]
    Invalid(#[from] crate::domain::order::InvalidTransition),
    /// The order's status allows the change but its stock does not (docs/after-sale.md).
    #[error(transparent)]
    Refused(#[from] StockRefusal),
    /// The order's payment is processing at its provider and cannot be cancelled (a bank
    /// debit): the order waits for the provider's outcome (docs/payments.md).
    #[error("the order's payment is processing at its provider; it cannot be cancelled until the provider decides")]
    PaymentProcessing,
    /// A refund decision named a request other than the one waiting (docs/payments.md,
    /// "Refund review").
    #[error("the refund request this decision names is not the one waiting; reload the order")]
    StaleDecision,
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// Why the stock of an order refuses an after-sale change its status would allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StockRefusal {
    /// Ship: the order's stock was lost (oversold, or pay-time stock short or stopped at
    /// payment); its money is being refunded and nothing may leave the warehouse.
    #[error("the order's stock was lost at payment and its money is refunded; it cannot be shipped")]
    StockLost,
    /// Ship: the payment's stock move has not run yet.
    #[error("the order's stock is not confirmed yet; retry in a moment")]
    NotConfirmed,
    /// Refund: a code of the order was redeemed (the gift card was used); it is never refunded
    /// (docs/code-pools.md, "Redemption").
    #[error("a code of this order was redeemed; it is never refunded")]
    CodesRedeemed,
    /// Ship: units of a BACKORDER line are still waiting for stock (docs/inventory-models.md,
    /// "Backorders (oversell allowed)"); the order ships once they are filled.
    #[error("{0} unit(s) of this order are still backordered; ship it once they are filled")]
    Backordered(u32),
    /// Ship: the codes its supplier issues at payment are not issued yet (still asked for, or
    /// given up and waiting for an operator's reissue): there is nothing to deliver.
    #[error("the order's codes are not issued by its supplier yet; ship once they are")]
    CodesNotIssued,
}

/// The order, if `user` owns it (anyone else gets `NotFound`, as for a missing order).
pub async fn get_owned(app: &App, user: &UserId, id: &OrderId) -> Result<Order, OrderError> {
    match app.orders.get(id).await? {
        Some(OrderRecord::Order(o)) if &o.user == user => Ok(*o),
        _ => Err(OrderError::NotFound),
    }
}
