//! The sale room's routes (docs/operations.md): the sales switch, the exact SKU view, campaign
//! list and statistics, the machinery page and the console shell.

use super::*;

#[utoipa::path(get, path = "/admin/sales-switch", tag = "sale", operation_id = "getSalesSwitch",
    responses(
        (status = 200, description = "The switch now (OPEN when never set)", body = SalesSwitchView),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        Retry,
    ))]
pub(super) fn get_sales_switch() {}

#[utoipa::path(put, path = "/admin/sales-switch", tag = "sale", operation_id = "putSalesSwitch",
    description = "The global stop-loss lever: bites in every warm Lambda within HOLDFAST_SWITCH_CACHE_MS (1 s by default). \
                   Payments, refunds, cancels, pause/resume and the switch itself are never refused.",
    request_body = SalesSwitchRequest,
    responses(
        (status = 200, description = "Set; the answer names who set it and when", body = SalesSwitchView),
        NotJson,
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        TooLarge,
        (status = 422, description = "Unknown mode or missing reason", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn put_sales_switch() {}

#[utoipa::path(get, path = "/admin/skus/{sku}", tag = "sale", operation_id = "adminGetSku",
    params(("sku" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$")),
    responses(
        (status = 200, description = "The SKU from strongly consistent reads, with every shard", body = AdminSkuView),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Not a SKU id", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn admin_get_sku() {}

#[utoipa::path(get, path = "/admin/campaigns", tag = "sale", operation_id = "listCampaigns",
    responses(
        (status = 200, description = "Every campaign, with its status now", body = CampaignList),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        Retry,
    ))]
pub(super) fn list_campaigns() {}

#[utoipa::path(get, path = "/admin/campaigns/{campaign_id}/stats", tag = "sale", operation_id = "campaignStats",
    params(("campaign_id" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$")),
    responses(
        (status = 200, description = "Counters (exact), refusals, orders by status, checkouts per second and latency \
         (a few seconds stale)", body = CampaignStats),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown campaign", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Not a campaign id", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn campaign_stats() {}

#[utoipa::path(get, path = "/admin/machinery", tag = "sale", operation_id = "machinery",
    responses(
        (status = 200, description = "Queue depths, dead letters and the last reconcile sweep", body = Machinery),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        Retry,
    ))]
pub(super) fn machinery() {}

#[utoipa::path(get, path = "/console/", tag = "sale", operation_id = "console",
    description = "The operator console: one HTML page. Public; everything it shows or changes goes through the admin \
                   routes with the admin token pasted into it.",
    responses(
        (status = 200, description = "The console", content_type = "text/html"),
    ))]
pub(super) fn console() {}

#[utoipa::path(get, path = "/shop/", tag = "sale", operation_id = "shop",
    description = "The storefront (docs/shop.md): one HTML page where a buyer sees a drop, joins its queue, checks \
                   out, pays and reads the codes. Public; everything it shows or changes goes through the buyer's \
                   routes with the buyer's token, and updates come pushed over the WebSocket endpoint.",
    responses(
        (status = 200, description = "The storefront", content_type = "text/html"),
    ))]
pub(super) fn shop() {}
