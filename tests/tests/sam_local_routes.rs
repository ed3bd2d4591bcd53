//! Under `sam local` the functions play the JWT authorizer themselves (`holdfast::sam_local`)
//! from a table of each route's auth. That table must say what `template.yaml` says, or
//! `make test-sam` would test a different API than the one deployed. No emulator needed.

use holdfast::sam_local::{route_auth_table, RouteAuth};
use holdfast_local::template::{Auth, Template};

fn text() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).expect("template.yaml")
}

fn problems(template: &str, table: &[(&str, RouteAuth)]) -> Vec<String> {
    let t = Template::parse(template).expect("template parses");
    let mut out = Vec::new();
    let routes = t.routes();
    for (key, _, auth) in &routes {
        let want = match auth {
            Auth::Public => None,
            Auth::Jwt { scopes } => Some(scopes.clone()),
        };
        let have = table.iter().find(|(k, _)| k == key).map(|(_, a)| match a {
            RouteAuth::Public => None,
            RouteAuth::Jwt(s) => Some(s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()),
        });
        match have {
            None => out.push(format!("{key} is in template.yaml but not in sam_local::route_auth_table()")),
            Some(h) if h != want => out.push(format!("{key}: template.yaml says {want:?}, the route table says {h:?}")),
            Some(_) => {}
        }
    }
    for (k, _) in table {
        if !routes.iter().any(|(r, _, _)| r == k) {
            out.push(format!("{k} is in sam_local::route_auth_table() but not in template.yaml"));
        }
    }
    out
}

#[test]
fn the_sam_local_authorizer_table_matches_the_template_route_for_route() {
    assert_eq!(problems(&text(), &route_auth_table()), Vec::<String>::new());
}

#[test]
fn a_scope_changed_in_the_template_but_not_in_the_table_is_reported() {
    let t = text().replacen(
        r#"AuthorizationScopes: ["orders:admin", "stock:admin"]"#,
        r#"AuthorizationScopes: ["stock:write"]"#,
        1,
    );
    assert_ne!(t, text());
    let p = problems(&t, &route_auth_table());
    // the first orders:admin route in the template (the admin order routes come first)
    assert!(p.iter().any(|p| p.contains("GET /admin/orders/{order_id}")), "{p:?}");
}

#[test]
fn a_route_made_public_in_the_table_only_is_reported() {
    let table: Vec<_> = route_auth_table()
        .into_iter()
        .map(|(k, a)| (k, if k == "POST /orders" { RouteAuth::Public } else { a }))
        .collect();
    let p = problems(&text(), &table);
    assert_eq!(
        p,
        vec![r#"POST /orders: template.yaml says Some(["orders:write"]), the route table says None"#.to_owned()]
    );
}
