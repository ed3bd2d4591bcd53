//! The campaign routes (flash sales).

use super::*;

#[utoipa::path(put, path = "/admin/campaigns/{campaign_id}", tag = "campaigns", operation_id = "putCampaign",
    params(("campaign_id" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$")),
    request_body = CampaignRequest,
    responses(
        (status = 200, description = "Updated", body = CampaignViewBody),
        (status = 201, description = "Created", body = CampaignViewBody),
        NotJson,
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 409, description = "campaign_locked_field: the update changes what is fixed at creation",
         body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body or unknown SKU", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn put_campaign() {}

#[utoipa::path(post, path = "/admin/campaigns/{campaign_id}/adjustments", tag = "campaigns",
    operation_id = "adjustCampaign",
    params(("campaign_id" = String, Path)),
    request_body = CampaignAdjustmentRequest,
    responses(
        (status = 200, description = "This adjustment_id was applied before; nothing changed", body = CampaignViewBody),
        (status = 201, description = "Applied", body = CampaignViewBody),
        NotJson,
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown campaign", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "insufficient_stock: removes more quota than is available", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body, SKU not in the campaign, or adjustment_id reused",
         body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn adjust_campaign() {}

#[utoipa::path(post, path = "/admin/campaigns/{campaign_id}/pause", tag = "campaigns", operation_id = "pauseCampaign",
    params(("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "Paused (or already paused)", body = CampaignViewBody),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown campaign", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        Retry,
    ))]
pub(super) fn pause_campaign() {}

#[utoipa::path(post, path = "/admin/campaigns/{campaign_id}/resume", tag = "campaigns",
    operation_id = "resumeCampaign",
    params(("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "Selling again (or was not paused)", body = CampaignViewBody),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown campaign", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        Retry,
    ))]
pub(super) fn resume_campaign() {}

#[utoipa::path(get, path = "/campaigns/{campaign_id}", tag = "campaigns", operation_id = "getCampaign",
    description = "Eventually consistent and cached briefly; `status` always follows the clock.",
    params(("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "The campaign", body = CampaignViewBody),
        (status = 404, description = "Unknown campaign", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn get_campaign() {}
