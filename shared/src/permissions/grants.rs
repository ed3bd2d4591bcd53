//! [`USES`](super::USES): per function, the IAM actions its handler paths need and on which
//! resource, with the code that issues each group's requests.

use super::Resource;
use super::Resource::*;

/// Per function binary: the IAM actions its handler paths need, on which resource.
///
/// The comment over each group names the code that issues the requests.
pub const USES: &[(&str, &[(&str, Resource)])] = &[
    (
        "create-order",
        &[
            // stock::metas → get_skus, stock::freeze → resplit → get_skus + read_shards
            ("dynamodb:BatchGetItem", StockTable),
            // stock::freeze: replay / fast-path → get_reservation; release (failed order put) → change
            ("dynamodb:GetItem", StockTable),
            // put_frozen: TransactWriteItems with a Put (reservation) …
            ("dynamodb:PutItem", StockTable),
            // … and Updates (shards, per-user counters); move_lock (release after a failed put)
            ("dynamodb:UpdateItem", StockTable),
            // … and, when this Lambda has not seen the sales switch lately, a ConditionCheck on it
            ("dynamodb:ConditionCheckItem", StockTable),
            // write_order: replay → orders.get (a SUPPLIER order's replay check, too)
            ("dynamodb:GetItem", OrderTable),
            // put_new; put_void (order put failed); supplier::book_new → replace (booking ids)
            ("dynamodb:PutItem", OrderTable),
            // Message::PaymentTimeout (or a SUPPLIER order's first SupplierPoll) after the order put
            ("sqs:SendMessage", PaymentTimeoutQueue),
            // Message::ReservationCheck in parallel with the freeze
            ("sqs:SendMessage", ReservationCheckQueue),
            // SUPPLIER SKUs: quote and book with the supplier's credential (review M3)
            ("secretsmanager:GetSecretValue", SupplierCredentialSecret),
            // a queued campaign's items: the admission token verified (docs/waiting-room.md)
            ("secretsmanager:GetSecretValue", AdmissionKeySecret),
        ],
    ),
    // the waiting room (docs/waiting-room.md), and the queued checkout: create-order's grants
    (
        "queue-api",
        &[
            // the campaign (stock::campaign), its quota shards, SKU metadata and shards (the
            // room's view of the stock), the stock the checkout's freeze reads
            ("dynamodb:BatchGetItem", StockTable),
            // tickets, counters, the room, spent admissions; the checkout's replay reads
            ("dynamodb:GetItem", StockTable),
            // a ticket, the room's clock (conditional PutItem); the freeze's transaction
            ("dynamodb:PutItem", StockTable),
            // a ticket counter (ADD); the freeze's counters; a release after a failed order put
            ("dynamodb:UpdateItem", StockTable),
            // the freeze's check of the sales switch (as create-order)
            ("dynamodb:ConditionCheckItem", StockTable),
            ("dynamodb:GetItem", OrderTable),
            ("dynamodb:PutItem", OrderTable),
            ("sqs:SendMessage", PaymentTimeoutQueue),
            ("sqs:SendMessage", ReservationCheckQueue),
            ("secretsmanager:GetSecretValue", SupplierCredentialSecret),
            // tokens signed (queue/me) and verified (the checkout)
            ("secretsmanager:GetSecretValue", AdmissionKeySecret),
        ],
    ),
    (
        "orders-api",
        &[
            // get_owned / cancel → orders.get
            ("dynamodb:GetItem", OrderTable),
            // cancel → orders.replace (a conditional PutItem, not UpdateItem)
            ("dynamodb:PutItem", OrderTable),
            // list → list_for_user: Query by-user (KEYS_ONLY) then BatchGetItem of the orders
            ("dynamodb:Query", OrderTableIndexes),
            ("dynamodb:BatchGetItem", OrderTable),
            // after_sale::apply → orders.get / replace (above); the admin view → get_reservation
            ("dynamodb:GetItem", StockTable),
            // the admin view → journal.for_cause (Query on the journal's by-ref index)
            ("dynamodb:Query", JournalTableIndexes),
            // GET /orders/{order_id}/codes → read_codes, and the keyring that opens them
            ("dynamodb:BatchGetItem", StockTable),
            ("secretsmanager:GetSecretValue", CodeKeySecret),
            // … and a v3 code's data key, opened under the SKU's encryption context (granted by
            // the key's policy, not the role's: see `CodeKey`)
            ("kms:Decrypt", CodeKey),
            // a code lock's fate, once: revealed (GET …/codes) or withdrawn (the buyer's
            // refund) — settle_codes, one conditional UpdateItem on the lock record
            ("dynamodb:UpdateItem", StockTable),
            // the payment providers (docs/after-sale.md, "Providers"): the generic provider's
            // credential and Stripe's API key, read at run time (PROVIDER_CALLERS; review M3, L8)
            ("secretsmanager:GetSecretValue", ProviderCredentialSecret),
            ("secretsmanager:GetSecretValue", StripeApiKeySecret),
            // GET /admin/ledger/{date}: the whole-store read (ports::Audit: paged, capped Scans
            // of both tables) and each SKU's journal read back (journal.for_sku, a Query on the
            // journal table's key; docs/operations.md, "Daily ledger report")
            ("dynamodb:Scan", StockTable),
            ("dynamodb:Scan", OrderTable),
            ("dynamodb:Query", JournalTable),
            // POST /admin/orders/{order_id}/codes/reissue: the supplier asked for a paid order's
            // codes (its credential), which are sealed under a KMS data key made for the SKU
            ("secretsmanager:GetSecretValue", SupplierCredentialSecret),
            ("kms:GenerateDataKey", CodeKey),
        ],
    ),
    (
        "payment-callback",
        &[
            // payments::apply, refunds::confirm → orders.get, orders.replace. Never touches stock
            // (docs/architecture.md, "Payment callback").
            ("dynamodb:GetItem", OrderTable),
            ("dynamodb:PutItem", OrderTable),
            // SecretsManagerKeys: the HMAC keys, AWSCURRENT and AWSPREVIOUS, cached
            ("secretsmanager:GetSecretValue", WebhookSecret),
            // POST /payments/stripe: Stripe's endpoint secret, AWSCURRENT and AWSPREVIOUS, cached
            ("secretsmanager:GetSecretValue", StripeWebhookSecret),
            // POST /payments/refunds: the refund confirmation's own key (review L1)
            ("secretsmanager:GetSecretValue", RefundWebhookSecret),
            // a SUPPLIER_CODES order just paid: its first Message::SupplierIssue (docs/suppliers.md)
            ("sqs:SendMessage", PaymentTimeoutQueue),
        ],
    ),
    (
        "reservations",
        &[
            // stock::metas, stock::freeze (as create-order)
            ("dynamodb:BatchGetItem", StockTable),
            ("dynamodb:GetItem", StockTable),
            ("dynamodb:PutItem", StockTable),
            // put_frozen Updates; confirm / release → move_lock (OnReleased::Refuse: no retake)
            ("dynamodb:UpdateItem", StockTable),
            // the freeze's check of the sales switch (as create-order)
            ("dynamodb:ConditionCheckItem", StockTable),
            // Message::ReservationCheck at the hold's deadline
            ("sqs:SendMessage", ReservationCheckQueue),
        ],
    ),
    (
        "stock-api",
        &[
            // admin::put_sku / adjust / view → get_skus, read_shards; put_sku(Some) and the
            // duplicate-adjustment read → batch_get. No get_reservation: no GetItem.
            ("dynamodb:BatchGetItem", StockTable),
            // put_sku / rebalance / adjust: transactions with Put items …
            ("dynamodb:PutItem", StockTable),
            // … and Update items (rebalance shards, adjust meta + shards)
            ("dynamodb:UpdateItem", StockTable),
            // GET /admin/skus/{sku}/journal → journal.for_sku (a Query on the table's key)
            ("dynamodb:Query", JournalTable),
            // POST /admin/skus/{sku}/codes → code_batch (a finished batch's record)
            ("dynamodb:GetItem", StockTable),
            // … and the keyring that seals the codes, AWSCURRENT and AWSPREVIOUS, cached
            ("secretsmanager:GetSecretValue", CodeKeySecret),
            // … and the KMS data key new codes are sealed under (one per SKU per warm Lambda,
            // cached; granted by the key's policy)
            ("kms:GenerateDataKey", CodeKey),
            // GET /admin/machinery: the depths of the queues the functions send to
            ("sqs:GetQueueAttributes", PaymentTimeoutQueue),
            ("sqs:GetQueueAttributes", ReservationCheckQueue),
            ("sqs:GetQueueAttributes", ReconcileWorkQueue),
            // waitlists (docs/waitlist.md): a told buyer's admission token signed (…/waitlist/me;
            // the WL* items and the spend QU# read and written through the grants above) and
            // WaitlistNotified when a leave or a read tells the next buyers
            ("secretsmanager:GetSecretValue", AdmissionKeySecret),
            ("events:PutEvents", EventBus),
        ],
    ),
    (
        "stock-read",
        &[
            // the anonymous public reads only (security review L5): admin::public_view,
            // admin::calendar → get_skus_public, read_shards_public; campaigns::view →
            // get_campaign, read_quota_shards — all eventually consistent BatchGets. The
            // template narrows it to SKU#, CMP# and CQ# keys (dynamodb:LeadingKeys): no code item,
            // no fingerprint, no lock. No write, no keyring.
            ("dynamodb:BatchGetItem", StockTable),
        ],
    ),
    (
        "stock-journal",
        &[
            // DynamoJournal::put
            ("dynamodb:BatchWriteItem", JournalTable),
            // sale::check_low_stock: the SKU's metadata and shards, the low-stock mark (a
            // conditional PutItem / DeleteItem of SALE#low#<sku>) and the LowStock event
            ("dynamodb:BatchGetItem", StockTable),
            ("dynamodb:PutItem", StockTable),
            ("dynamodb:DeleteItem", StockTable),
            // waitlist::upkeep for SKUs whose free units rose (docs/waitlist.md): the head, the
            // told entries' spends (GetItem WLH#, QU#), entries and shards (BatchGetItem WLE#,
            // SKU#), buyers' lists (GetItem WLU#), the commit (a transaction of Puts of WL* items)
            ("dynamodb:GetItem", StockTable),
            ("events:PutEvents", EventBus),
            // Not the code: the stream event source's OnFailure destination (as publish-events)
            ("sqs:SendMessage", StockJournalFailureQueue),
        ],
    ),
    (
        "publish-events",
        &[
            // EventBridgeBus::publish
            ("events:PutEvents", EventBus),
            // sale::flush: campaign orders by status, added to SALE#live#<campaign>
            ("dynamodb:UpdateItem", StockTable),
            // Not the code: the stream event source's OnFailure destination sends with the
            // function's role (its DestinationConfig names no Type, so SAM adds no policy).
            ("sqs:SendMessage", PublishEventsFailureQueue),
        ],
    ),
    (
        "stock-events",
        &[
            // stock::confirm (OnReleased::Retake) / release → change → get_reservation
            ("dynamodb:GetItem", StockTable),
            // move_lock, retake (Update-only transactions), mark_oversold (UpdateItem)
            ("dynamodb:UpdateItem", StockTable),
            // a release of a code line reads its codes and ring tails and puts the codes back
            // at the tails (docs/code-pools.md)
            ("dynamodb:BatchGetItem", StockTable),
            ("dynamodb:PutItem", StockTable),
            // retake → OversellDetected
            ("events:PutEvents", EventBus),
            // cross_check: the order's status must agree with the event (security review V4)
            ("dynamodb:GetItem", OrderTable),
        ],
    ),
    (
        "refunds",
        &[
            // refunds::issue / request_for_oversell, supplier::compensate → orders.get,
            // orders.replace; the provider and the supplier are HTTP peers, not AWS resources
            ("dynamodb:GetItem", OrderTable),
            ("dynamodb:PutItem", OrderTable),
            // request_for_oversell cross-checks OversellDetected against the lock's mark
            // (get_reservation)
            ("dynamodb:GetItem", StockTable),
            // the payment providers (docs/after-sale.md, "Providers"): the generic provider's
            // credential and Stripe's API key, read at run time (PROVIDER_CALLERS; review M3, L8)
            ("secretsmanager:GetSecretValue", ProviderCredentialSecret),
            ("secretsmanager:GetSecretValue", StripeApiKeySecret),
            // the supplier's credential on every supplier call (review M3)
            ("secretsmanager:GetSecretValue", SupplierCredentialSecret),
        ],
    ),
    (
        "payment-timeout",
        &[
            // orders::payment_timeout → orders.get, expire → orders.replace; supplier::poll (same)
            ("dynamodb:GetItem", OrderTable),
            ("dynamodb:PutItem", OrderTable),
            // re-arm for a deadline more than one hop away; the next SupplierPoll; the payment
            // timeout of a SUPPLIER order that just became payable
            ("sqs:SendMessage", PaymentTimeoutQueue),
            // the payment providers (docs/after-sale.md, "Providers"): the generic provider's
            // credential and Stripe's API key, read at run time (PROVIDER_CALLERS; review M3, L8)
            ("secretsmanager:GetSecretValue", ProviderCredentialSecret),
            ("secretsmanager:GetSecretValue", StripeApiKeySecret),
            // the supplier's credential on every supplier call (review M3)
            ("secretsmanager:GetSecretValue", SupplierCredentialSecret),
            // Message::SupplierIssue: the codes a supplier issued, sealed under the keyring and a
            // KMS data key made for the SKU (granted by the key's policy) before they are stored
            ("secretsmanager:GetSecretValue", CodeKeySecret),
            ("kms:GenerateDataKey", CodeKey),
        ],
    ),
    (
        "reservation-check",
        &[
            // checks::reservation_check → get_reservation; resolve_frozen(sweep = false) →
            // stock::release only (the confirm branch, which could publish OversellDetected,
            // is reconcile's: `sweep &&`).
            ("dynamodb:GetItem", StockTable),
            ("dynamodb:UpdateItem", StockTable),
            // a release of a code line: its codes and ring tails read, the codes put back
            ("dynamodb:BatchGetItem", StockTable),
            ("dynamodb:PutItem", StockTable),
            // orders.get; put_void (the fence)
            ("dynamodb:GetItem", OrderTable),
            ("dynamodb:PutItem", OrderTable),
            // re-arm when not yet due; a recorded checkout recorded again while the store is out
            ("sqs:SendMessage", ReservationCheckQueue),
            // a recorded checkout (orders::recorded::complete): the checkout create-order runs —
            // stock::metas and the freeze's reads, its transaction (Put, Updates, the sales
            // switch's ConditionCheck), the order put and its payment-timeout message
            ("dynamodb:ConditionCheckItem", StockTable),
            ("sqs:SendMessage", PaymentTimeoutQueue),
        ],
    ),
    (
        "reconcile",
        &[
            // reconcile::seed: one sweep's work items, unless the last sweep's are still queued
            ("sqs:SendMessage", ReconcileWorkQueue),
            ("sqs:GetQueueAttributes", ReconcileWorkQueue),
            // sale::note_sweep: the machinery page's last sweep (SALE#live#reconcile)
            ("dynamodb:UpdateItem", StockTable),
        ],
    ),
    (
        "reconcile-worker",
        &[
            // stale_locks → get_reservations; settled → get_skus + read_shards
            ("dynamodb:BatchGetItem", StockTable),
            // resolve_frozen(sweep = true) → release / confirm → get_reservation
            ("dynamodb:GetItem", StockTable),
            // move_lock, retake, mark_oversold
            ("dynamodb:UpdateItem", StockTable),
            // a code line's release and the code pool repair put codes back in their rings
            ("dynamodb:PutItem", StockTable),
            // DynamoSweep: frozen_page (frozen-by-age), skus_page (skus)
            ("dynamodb:Query", StockTableIndexes),
            // resolve_frozen / overdue orders → orders.get
            ("dynamodb:GetItem", OrderTable),
            // put_void (fence), expire → replace
            ("dynamodb:PutItem", OrderTable),
            // DynamoSweep::pending_page (pending-by-deadline), shipped_page, refunds_page
            ("dynamodb:Query", OrderTableIndexes),
            // confirm → retake → OversellDetected
            ("events:PutEvents", EventBus),
            // the rest of an item past its budget, sent back with its cursor
            ("sqs:SendMessage", ReconcileWorkQueue),
            // a SUPPLIER order resolved past its timeout that confirmed: its payment timeout
            ("sqs:SendMessage", PaymentTimeoutQueue),
            // SkuJournals → journal.since; LockedTotals → journal.for_sku (Queries on the key)
            ("dynamodb:Query", JournalTable),
            // SkuJournals → journal.checkpoint / put_checkpoint (review protocol-2 #7)
            ("dynamodb:GetItem", JournalTable),
            ("dynamodb:PutItem", JournalTable),
            // the payment providers (docs/after-sale.md, "Providers"): the generic provider's
            // credential and Stripe's API key, read at run time (PROVIDER_CALLERS; review M3, L8)
            ("secretsmanager:GetSecretValue", ProviderCredentialSecret),
            ("secretsmanager:GetSecretValue", StripeApiKeySecret),
            // the supplier's credential on every supplier call (review M3)
            ("secretsmanager:GetSecretValue", SupplierCredentialSecret),
            // a paid order's supplier code issue whose message was lost: issued and sealed here
            ("secretsmanager:GetSecretValue", CodeKeySecret),
            ("kms:GenerateDataKey", CodeKey),
        ],
    ),
    // the push channel (docs/push.md): connections and sent-marks (adapters::dynamo::connections),
    // a watched ticket read as `GET …/queue/me` reads it (service::queue::me), watch timers on its
    // own queue, frames posted through this API's management endpoint (adapters::push)
    (
        "push-api",
        &[
            // open (two puts), claim (a conditional put)
            ("dynamodb:PutItem", ConnectionTable),
            // close: both directions
            ("dynamodb:DeleteItem", ConnectionTable),
            // of_user, user_of (Queries on the key)
            ("dynamodb:Query", ConnectionTable),
            // queue::me: the campaign, stock shards, counters (BatchGetItem); ticket, room,
            // spent (GetItem); the room's clock moved on a halt or resume (conditional PutItem)
            ("dynamodb:BatchGetItem", StockTable),
            ("dynamodb:GetItem", StockTable),
            ("dynamodb:PutItem", StockTable),
            // the admission token of an ADMITTED ticket, signed
            ("secretsmanager:GetSecretValue", AdmissionKeySecret),
            // watch timers
            ("sqs:SendMessage", PushQueue),
            // PostToConnection
            ("execute-api:ManageConnections", PushConnections),
        ],
    ),
];
