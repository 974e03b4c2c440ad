use serde_json::json;

use super::*;

use crate::permissions::PermissionReply;

#[test]
fn user_messages_take_text_or_blocks() {
    let text =
        decode(r#"{"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null,"session_id":""}"#)
            .unwrap();
    assert!(matches!(&text, Inbound::User { content, .. } if content == &vec![ContentBlock::text("hi")]));
    let blocks = decode(
        r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},
           {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}}"#,
    )
    .unwrap();
    let Inbound::User { content, .. } = blocks else {
        panic!("not a user message")
    };
    assert_eq!(content.len(), 2);
    assert!(matches!(&content[1], ContentBlock::Image { source } if source.media_type == "image/png"));
}

#[test]
fn bad_user_messages_say_what_is_wrong() {
    for (line, expect) in [
        ("not json", "not JSON"),
        (r#"{"message":{}}"#, "`type`"),
        (r#"{"type":"user"}"#, "needs `message`"),
        (
            r#"{"type":"user","message":{"role":"assistant","content":"x"}}"#,
            "role `user`",
        ),
        (r#"{"type":"user","message":{"content":42}}"#, "string or an array"),
        (r#"{"type":"user","message":{"content":[]}}"#, "no content"),
        (
            r#"{"type":"user","message":{"content":[{"type":"video"}]}}"#,
            "content block 0",
        ),
        (
            r#"{"type":"assistant","message":{}}"#,
            "unknown message type `assistant`",
        ),
    ] {
        let e = decode(line).unwrap_err();
        assert!(e.message.contains(expect), "{line}: {}", e.message);
        assert_eq!(e.request_id, None);
    }
}

#[test]
fn initialize_with_hooks_agents_and_prompt_options() {
    let line = r#"{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize",
        "hooks":{"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["hook_0","hook_1"],"timeout":5}],
                 "Stop":[{"matcher":null,"hookCallbackIds":["hook_2"]}]},
        "agents":{"reviewer":{"description":"reviews","prompt":"You review."}},
        "sdkMcpServers":["calc"],
        "systemPrompt":"Be brief.","appendSystemPrompt":"Say done.","jsonSchema":{"type":"object"}}}"#;
    let Inbound::Request { id, request } = decode(line).unwrap() else {
        panic!("not a request")
    };
    assert_eq!(id, "req_1");
    let ClientRequest::Initialize(init) = request else {
        panic!("not initialize")
    };
    assert_eq!(
        init.hooks,
        vec![
            HookRegistration {
                event: "PreToolUse".into(),
                matcher: Some("Bash".into()),
                callback_ids: vec!["hook_0".into(), "hook_1".into()],
                timeout_secs: Some(5),
            },
            HookRegistration {
                event: "Stop".into(),
                matcher: None,
                callback_ids: vec!["hook_2".into()],
                timeout_secs: None,
            },
        ]
    );
    assert_eq!(init.agents.unwrap()["reviewer"]["prompt"], "You review.");
    assert_eq!(init.sdk_mcp_servers, vec!["calc"]);
    assert_eq!(init.system_prompt.as_deref(), Some("Be brief."));
    assert_eq!(init.append_system_prompt.as_deref(), Some("Say done."));
    assert_eq!(init.json_schema, Some(json!({"type": "object"})));
    // The SDK's plain form.
    let plain =
        decode(r#"{"type":"control_request","request_id":"r","request":{"subtype":"initialize","hooks":null}}"#)
            .unwrap();
    assert_eq!(
        plain,
        Inbound::Request {
            id: "r".into(),
            request: ClientRequest::Initialize(Box::default())
        }
    );
}

#[test]
fn a_malformed_request_keeps_its_id_for_the_error_response() {
    let e = decode(r#"{"type":"control_request","request_id":"req_9","request":{"subtype":"initialize","hooks":[1]}}"#)
        .unwrap_err();
    assert_eq!(e.request_id.as_deref(), Some("req_9"));
    assert!(e.message.contains("hooks"), "{}", e.message);
    let e = decode(r#"{"type":"control_request","request_id":"req_8","request":{"subtype":"set_permission_mode"}}"#)
        .unwrap_err();
    assert_eq!(e.request_id.as_deref(), Some("req_8"));
}

#[test]
fn the_other_requests() {
    let req = |body: &str| match decode(&format!(
        r#"{{"type":"control_request","request_id":"x","request":{body}}}"#
    )) {
        Ok(Inbound::Request { request, .. }) => request,
        other => panic!("{other:?}"),
    };
    assert_eq!(req(r#"{"subtype":"interrupt"}"#), ClientRequest::Interrupt);
    assert_eq!(
        req(r#"{"subtype":"set_permission_mode","mode":"acceptEdits"}"#),
        ClientRequest::SetPermissionMode("acceptEdits".into())
    );
    assert_eq!(
        req(r#"{"subtype":"set_model","model":"haiku"}"#),
        ClientRequest::SetModel(Some("haiku".into()))
    );
    assert_eq!(
        req(r#"{"subtype":"set_model","model":null}"#),
        ClientRequest::SetModel(None)
    );
    assert_eq!(
        req(r#"{"subtype":"set_model","model":"default"}"#),
        ClientRequest::SetModel(None)
    );
    assert_eq!(req(r#"{"subtype":"mcp_status"}"#), ClientRequest::McpStatus);
    assert_eq!(
        req(r#"{"subtype":"rewind_files","user_message_id":"u"}"#),
        ClientRequest::Unsupported("rewind_files".into())
    );
}

#[test]
fn responses_and_cancels() {
    assert_eq!(
        decode(r#"{"type":"control_response","response":{"subtype":"success","request_id":"k1","response":{"behavior":"allow"}}}"#)
            .unwrap(),
        Inbound::Response {
            id: "k1".into(),
            result: Ok(json!({"behavior": "allow"}))
        }
    );
    assert_eq!(
        decode(r#"{"type":"control_response","response":{"subtype":"error","request_id":"k2","error":"boom"}}"#)
            .unwrap(),
        Inbound::Response {
            id: "k2".into(),
            result: Err("boom".into())
        }
    );
    assert!(decode(r#"{"type":"control_response","response":{"subtype":"maybe","request_id":"k3"}}"#).is_err());
    assert_eq!(
        decode(r#"{"type":"control_cancel_request","request_id":"k4"}"#).unwrap(),
        Inbound::Cancel { id: "k4".into() }
    );
    assert_eq!(decode(r#"{"type":"keep_alive"}"#).unwrap(), Inbound::Nothing);
}

#[test]
fn envelopes() {
    assert_eq!(
        success("r1", json!({"mode": "plan"})),
        json!({"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"mode":"plan"}}})
    );
    assert_eq!(
        error("r2", "no such thing"),
        json!({"type":"control_response","response":{"subtype":"error","request_id":"r2","error":"no such thing"}})
    );
    assert_eq!(
        control_request("k", hook_callback("hook_0", json!({"a": 1}), Some("toolu_1".into()))),
        json!({"type":"control_request","request_id":"k","request":{"subtype":"hook_callback","callback_id":"hook_0","input":{"a":1},"tool_use_id":"toolu_1"}})
    );
}

#[test]
fn can_use_tool_carries_the_question() {
    let (tx, _rx) = tokio::sync::oneshot::channel();
    let p = PermissionPrompt {
        tool_use_id: "toolu_1".into(),
        tool_name: "Write".into(),
        input: json!({"file_path": "/w/a.txt", "content": "x", "description": "make a"}),
        detail: String::new(),
        suggested_rule: None,
        reason: "writes a file".into(),
        suggestions: vec![json!({"type": "addRules"})],
        preview: Default::default(),
        reply: tx,
    };
    let r = can_use_tool(&p);
    assert_eq!(r["subtype"], "can_use_tool");
    assert_eq!(r["tool_name"], "Write");
    assert_eq!(r["input"]["content"], "x");
    assert_eq!(r["tool_use_id"], "toolu_1");
    assert_eq!(r["blocked_path"], "/w/a.txt");
    assert_eq!(r["description"], "make a");
    assert_eq!(r["permission_suggestions"][0]["type"], "addRules");
}

#[test]
fn permission_answers() {
    let (allow, ignored) = permission_reply(Ok(json!({
        "behavior": "allow",
        "updatedInput": {"command": "echo safe"},
        "updatedPermissions": [
            {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
            {"type": "addDirectories", "directories": ["/x"], "destination": "session"},
            {"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "sometimes"}
        ]
    })));
    assert_eq!(
        allow,
        PermissionReply::Allow {
            updated_input: Some(json!({"command": "echo safe"})),
            // One update keel cannot read voids the list, as with the reference.
            updates: Vec::new(),
        }
    );
    assert_eq!(ignored, vec!["addRules with unknown behavior `sometimes`".to_string()]);
    assert_eq!(
        permission_reply(Ok(json!({"behavior": "deny", "message": "nope", "interrupt": true}))).0,
        PermissionReply::Reject {
            message: "nope".into(),
            interrupt: true
        }
    );
    for bad in [
        Ok(json!({})),
        Ok(json!({"behavior": "maybe"})),
        Err("callback raised".to_string()),
    ] {
        assert!(
            matches!(permission_reply(bad.clone()).0, PermissionReply::Reject { ref message, interrupt: false } if !message.is_empty()),
            "{bad:?}"
        );
    }
}
