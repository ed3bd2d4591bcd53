//! Prints the OpenAPI document generated from the API types (`make openapi` writes it to
//! docs/openapi.json).

fn main() {
    print!("{}", holdfast::handlers::routes::openapi_json());
}
