//! Codes issued by a supplier at payment (docs/suppliers.md, "Codes issued by the supplier"):
//! an issued code belongs to exactly one paid order; a paid order of the kind has its codes or an
//! issue in progress (or given up, for an operator); nothing is issued for an unpaid order.

use super::Violation;
use crate::order::codes::{state, OrderCodes};
use crate::order::{Order, OrderRecord, OrderStatus};
use crate::supplier::codes::IssueStatus;
use crate::OrderId;
use std::collections::HashMap;

fn never_paid(s: OrderStatus) -> bool {
    matches!(
        s,
        OrderStatus::PendingPayment
            | OrderStatus::Paying
            | OrderStatus::AwaitingSupplier
            | OrderStatus::Cancelled
            | OrderStatus::Expired
            | OrderStatus::Failed
    )
}

fn one(o: &Order, out: &mut Vec<Violation>) {
    let v = |detail: String| Violation::SupplierCodes { order: o.id.to_string(), detail };
    for b in &o.supplier {
        let Some(c) = &b.codes else { continue };
        if !b.issues_codes {
            out.push(v(format!("a code issue on {}, whose booking issues no codes", b.sku)));
        }
        if never_paid(o.status) {
            out.push(v(format!("a code issue of {} on a {} order", b.sku, o.status.as_str())));
        }
        match c.status {
            IssueStatus::Issued if c.codes.len() != b.quantity as usize => {
                out.push(v(format!("{} codes of {} issued for {} units", c.codes.len(), b.sku, b.quantity)))
            }
            IssueStatus::Pending | IssueStatus::GaveUp if !c.codes.is_empty() => {
                out.push(v(format!("codes of {} stored while the issue is {}", b.sku, c.status.as_str())))
            }
            _ => {}
        }
    }
    if o.status.is_paid_or_later() && !never_paid(o.status) && state(o) == OrderCodes::Unpaid {
        out.push(v("paid, and no code issue was started".into()));
    }
}

pub(super) fn check(orders: &[(OrderId, OrderRecord)]) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut seen: HashMap<(&str, &str), &OrderId> = HashMap::new();
    for (id, r) in orders {
        let OrderRecord::Order(o) = r else { continue };
        one(o, &mut out);
        for b in o.supplier.iter().filter(|b| b.issues_codes) {
            for c in b.codes.iter().flat_map(|c| c.codes.iter()) {
                if let Some(first) = seen.insert((b.sku.as_str(), c.fingerprint.as_str()), id) {
                    let detail = format!("a code of {} is also issued to order {first}", b.sku);
                    out.push(Violation::SupplierCodes { order: id.to_string(), detail });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::codes::tests::{booking, order, paid, sealed};
    use crate::order::codes::{give_up, record_issued};
    use crate::Sku;

    fn run(orders: Vec<Order>) -> Vec<String> {
        let recs: Vec<(OrderId, OrderRecord)> =
            orders.into_iter().map(|o| (o.id.clone(), OrderRecord::Order(Box::new(o)))).collect();
        check(&recs)
            .into_iter()
            .map(|v| match v {
                Violation::SupplierCodes { detail, .. } => detail,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn issued_codes_belong_to_one_paid_order_and_a_paid_order_has_its_issue() {
        let gc = Sku::parse("GC").unwrap();
        let unpaid = order(vec![booking("GC", true)]);
        let mut ok = paid(order(vec![booking("GC", true)]), 10);
        assert!(run(vec![unpaid.clone(), ok.clone()]).is_empty(), "unpaid: nothing; paid: pending");
        record_issued(&mut ok, &gc, sealed(2), 5, None);
        let mut gave_up = paid(order(vec![booking("GC", true)]), 10);
        give_up(&mut gave_up);
        gave_up.id = OrderId::parse("o2").unwrap();
        assert!(run(vec![ok.clone(), gave_up]).is_empty());
        // the same code issued to a second order
        let mut twin = ok.clone();
        twin.id = OrderId::parse("o3").unwrap();
        assert!(run(vec![ok.clone(), twin]).iter().any(|d| d.contains("also issued to order o1")));
        // issued for an order never paid; a wrong count; paid with no issue started
        let mut stray = ok.clone();
        stray.status = OrderStatus::Cancelled;
        assert!(run(vec![stray]).iter().any(|d| d.contains("CANCELLED order")));
        let mut short = ok.clone();
        short.supplier[0].codes.as_mut().unwrap().codes.pop();
        assert!(run(vec![short]).iter().any(|d| d.contains("1 codes of GC issued for 2 units")));
        let mut lost = unpaid;
        lost.status = OrderStatus::Paid;
        assert_eq!(run(vec![lost]), ["paid, and no code issue was started"]);
    }
}
