//! Whether a function's wiring agrees with its IAM grants ([`crate::permissions::USES`]): a
//! wired port needs a grant that reaches its resource (else every call of it would be refused
//! by IAM), and every grant the code uses needs the port that issues it (else the handler path
//! the grant was written for would meet an [`super::unwired::Unwired`] port). Each function
//! crate's test runs its own `wire` through [`check_grants`].

use super::wiring::{Port, Wiring};
use crate::config::Config;
use crate::permissions::Resource::{self, *};

/// The grants that show a function uses `port`: (IAM action, resource). Any one is enough.
fn evidence(port: Port) -> &'static [(&'static str, Resource)] {
    const TABLE_ACTIONS: [&str; 8] = [
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:Query",
        "dynamodb:ConditionCheckItem",
    ];
    const fn on(r: Resource) -> [(&'static str, Resource); 8] {
        let a = TABLE_ACTIONS;
        [(a[0], r), (a[1], r), (a[2], r), (a[3], r), (a[4], r), (a[5], r), (a[6], r), (a[7], r)]
    }
    const STOCK: [(&str, Resource); 8] = on(StockTable);
    const ORDERS: [(&str, Resource); 9] = {
        let o = on(OrderTable);
        [o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], ("dynamodb:Query", OrderTableIndexes)]
    };
    const JOURNAL: [(&str, Resource); 9] = {
        let j = on(JournalTable);
        [j[0], j[1], j[2], j[3], j[4], j[5], j[6], j[7], ("dynamodb:Query", JournalTableIndexes)]
    };
    const SECRET: &str = "secretsmanager:GetSecretValue";
    match port {
        Port::StockTable => &STOCK,
        Port::OrderTable => &ORDERS,
        Port::Sweep => &[("dynamodb:Query", StockTableIndexes), ("dynamodb:Query", OrderTableIndexes)],
        Port::Audit => &[("dynamodb:Scan", StockTable), ("dynamodb:Scan", OrderTable)],
        Port::Journal => &JOURNAL,
        Port::Queues => &[
            ("sqs:SendMessage", PaymentTimeoutQueue),
            ("sqs:SendMessage", ReservationCheckQueue),
            ("sqs:SendMessage", ReconcileWorkQueue),
            ("sqs:GetQueueAttributes", PaymentTimeoutQueue),
            ("sqs:GetQueueAttributes", ReservationCheckQueue),
            ("sqs:GetQueueAttributes", ReconcileWorkQueue),
        ],
        Port::Bus => &[("events:PutEvents", EventBus)],
        Port::WebhookKeys => &[(SECRET, WebhookSecret)],
        Port::StripeWebhookKeys => &[(SECRET, StripeWebhookSecret)],
        Port::RefundWebhookKeys => &[(SECRET, RefundWebhookSecret)],
        Port::CodeKeys => &[(SECRET, CodeKeySecret)],
        Port::AdmissionKeys => &[(SECRET, AdmissionKeySecret)],
        Port::CodeKeyService => &[("kms:GenerateDataKey", CodeKey), ("kms:Decrypt", CodeKey)],
        Port::Providers => &[(SECRET, ProviderCredentialSecret), (SECRET, StripeApiKeySecret)],
        Port::Supplier => &[(SECRET, SupplierCredentialSecret)],
        Port::Push => &[
            ("dynamodb:PutItem", ConnectionTable),
            ("dynamodb:DeleteItem", ConnectionTable),
            ("dynamodb:Query", ConnectionTable),
            ("dynamodb:GetItem", ConnectionTable),
            ("dynamodb:UpdateItem", ConnectionTable),
            ("sqs:SendMessage", PushQueue),
            ("execute-api:ManageConnections", PushConnections),
        ],
    }
}

/// Grants the platform uses, not the code: a stream source's on-failure destination.
fn platform_only(grant: &(&str, Resource)) -> bool {
    matches!(grant.1, PublishEventsFailureQueue | StockJournalFailureQueue)
}

/// Where `wired` and the grants of `function` disagree: one line per wired port no grant
/// reaches, and per grant no wired port issues. Empty = they agree.
pub fn disagreements(function: &str, wired: &[Port]) -> Vec<String> {
    let Some(grants) = crate::permissions::uses(function) else {
        return vec![format!("{function} has no entry in permissions::USES")];
    };
    let mut out = Vec::new();
    for port in wired {
        if !grants.iter().any(|g| evidence(*port).contains(g)) {
            out.push(format!("{function} wires {} but no grant reaches it", port.name()));
        }
    }
    for g in grants.iter().filter(|g| !platform_only(g)) {
        if !wired.iter().any(|p| evidence(*p).contains(g)) {
            let ports: Vec<&str> = Port::ALL.iter().filter(|p| evidence(**p).contains(g)).map(|p| p.name()).collect();
            out.push(format!("{function} is granted {} on {:?} but wires none of {ports:?}", g.0, g.1));
        }
    }
    out
}

/// Runs `wire` (a function's `main` wiring) on an offline SDK configuration and compares the
/// ports it wires with the function's grants. `Err` lists every disagreement.
pub fn check_grants(function: &str, wire: impl FnOnce(Wiring) -> Wiring) -> Result<Vec<Port>, String> {
    let config = Config::from_lookup(&|_| None).map_err(|e| e.to_string())?;
    let sdk = aws_config::SdkConfig::builder().behavior_version(aws_config::BehaviorVersion::latest()).build();
    let wiring = wire(Wiring::new(function, config, &sdk).map_err(|e| e.to_string())?);
    let wired = wiring.ports().to_vec();
    wiring.build().map_err(|e| format!("{function}: {e:#}"))?;
    let bad = disagreements(function, &wired);
    if bad.is_empty() {
        Ok(wired)
    } else {
        Err(bad.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grant_the_code_uses_names_a_port() {
        for (function, grants) in crate::permissions::USES {
            for g in grants.iter().filter(|g| !platform_only(g)) {
                assert!(Port::ALL.iter().any(|p| evidence(*p).contains(g)), "{function}: {g:?} is no port's");
            }
        }
    }

    #[test]
    fn a_port_without_a_grant_is_refused() {
        // create-order may not touch the push channel nor the bus
        let bad = check_grants("create-order", |w| {
            w.stock_table().order_table().queues().supplier().admission_keys().push().bus()
        })
        .unwrap_err();
        assert!(bad.contains("create-order wires push but no grant reaches it"), "{bad}");
        assert!(bad.contains("create-order wires bus but no grant reaches it"), "{bad}");
        assert_eq!(bad.lines().count(), 2, "{bad}");
    }

    #[test]
    fn a_granted_port_left_out_is_refused() {
        // create-order is granted SendMessage on two queues and the supplier's credential
        let bad = check_grants("create-order", |w| w.stock_table().order_table().admission_keys()).unwrap_err();
        assert!(bad.contains("sqs:SendMessage on PaymentTimeoutQueue but wires none of [\"queues\"]"), "{bad}");
        assert!(bad.contains("SupplierCredentialSecret but wires none of [\"supplier\"]"), "{bad}");
        assert_eq!(bad.lines().count(), 3, "{bad}");
    }

    #[test]
    fn the_grants_of_create_order_are_met_by_its_wiring() {
        let wired =
            check_grants("create-order", |w| w.stock_table().order_table().queues().supplier().admission_keys())
                .unwrap();
        assert_eq!(wired.len(), 5);
    }

    #[test]
    fn an_unknown_function_is_refused() {
        assert!(check_grants("no-such-function", |w| w).is_err());
    }

    #[test]
    fn an_unwired_port_fails_naming_itself() {
        let config = Config::from_lookup(&|_| None).unwrap();
        let sdk = aws_config::SdkConfig::builder().behavior_version(aws_config::BehaviorVersion::latest()).build();
        let app = Wiring::new("stock-read", config, &sdk).unwrap().stock_table().build().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let e = rt.block_on(app.orders.get(&crate::domain::OrderId::parse("o1").unwrap())).unwrap_err();
        assert_eq!(
            e.to_string(),
            "port order-table is not wired in stock-read (functions/stock-read/src/main.rs wires what its IAM grants allow)"
        );
        let e = rt.block_on(app.messages.queue_depths()).unwrap_err();
        assert!(e.to_string().starts_with("port queues is not wired"), "{e}");
    }
}
