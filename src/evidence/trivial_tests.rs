use super::super::{Lang, patterns};
use super::*;

/// How many of the assertions in `code` cannot fail (the patterns of `weakened` find them).
fn trivial(lang: Lang, code: &str) -> usize {
    patterns(lang)
        .assertion
        .find_iter(code)
        .filter(|m| cannot_fail(lang, m.as_str(), &code[m.start()..]))
        .count()
}

#[test]
fn assertions_that_cannot_fail() {
    let cases: &[(Lang, &str)] = &[
        (Lang::Python, "assert True"),
        (Lang::Python, "assert True, 'always'"),
        (Lang::Python, "assert 1 == 1"),
        (Lang::Python, "assert (x == x)"),
        (Lang::Python, "assert 'a' == \"a\""),
        (Lang::Python, "assert not False"),
        (Lang::Python, "assert 1"),
        (Lang::Python, "assert (add(1, 2) == 4, 'tuple is always true')"),
        (Lang::Python, "self.assertTrue(True)"),
        (Lang::Python, "self.assertFalse(False)"),
        (Lang::Python, "self.assertEqual(1, 1)"),
        (Lang::Python, "self.assertEqual(1, 1.0)"),
        (Lang::Python, "self.assertIsNone(None)"),
        (Lang::Python, "self.assertIsNotNone(3)"),
        (Lang::Python, "self.assertNotEqual(1, 2)"),
        (Lang::Js, "expect(true).toBe(true);"),
        (Lang::Js, "expect(1).toEqual(1);"),
        (Lang::Js, "expect(true).toBeTruthy();"),
        (Lang::Js, "expect(null).toBeNull();"),
        (Lang::Js, "expect(x)\n    .toBe(x);"),
        (Lang::Js, "expect(true).to.be.true;"),
        (Lang::Js, "expect(1).to.equal(1);"),
        (Lang::Js, "assert(true);"),
        (Lang::Js, "assert.ok(1);"),
        (Lang::Js, "assert.strictEqual('a', 'a');"),
        (Lang::Js, "t.is(2, 2);"),
        (Lang::Js, "t.true(true);"),
        (Lang::Rust, "assert!(true);"),
        (Lang::Rust, "assert!(true, \"msg\");"),
        (Lang::Rust, "assert_eq!(1, 1);"),
        (Lang::Rust, "assert_eq!(x, x);"),
        (Lang::Rust, "debug_assert!(1 == 1);"),
        (Lang::Rust, "assert_ne!(1, 2);"),
        (Lang::Go, "assert.True(t, true)"),
        (Lang::Go, "require.Equal(t, 2, 2)"),
        (Lang::Jvm, "assertTrue(true);"),
        (Lang::Jvm, "assertEquals(3, 3);"),
        (Lang::Jvm, "assertEquals(\"why\", 3, 3);"),
        (Lang::Jvm, "Assertions.assertEquals(1, 1);"),
        (Lang::Jvm, "assertThat(true).isTrue();"),
        (Lang::Jvm, "assertThat(x).isEqualTo(x);"),
        (Lang::Php, "$this->assertTrue(true);"),
        (Lang::Php, "$this->assertSame(1, 1);"),
        (Lang::Php, "expect(true)->toBeTrue();"),
        (Lang::CSharp, "Assert.True(true);"),
        (Lang::CSharp, "Assert.IsTrue(true);"),
        (Lang::CSharp, "Assert.AreEqual(2, 2);"),
        (Lang::Ruby, "assert true"),
        (Lang::Ruby, "assert_equal 1, 1"),
        (Lang::Ruby, "assert_equal(:a, :a)"),
        (Lang::Ruby, "refute false"),
        (Lang::Ruby, "expect(1).to eq(1)"),
        (Lang::Ruby, "expect(1).to eq 1"),
        (Lang::Ruby, "expect(true).to be true"),
        (Lang::Ruby, "expect(true).to be_truthy"),
    ];
    for (lang, code) in cases {
        assert_eq!(trivial(*lang, code), 1, "{lang:?}: {code}");
    }
}

#[test]
fn assertions_that_can_fail() {
    let cases: &[(Lang, &str)] = &[
        (Lang::Python, "assert add(1, 2) == 3"),
        (Lang::Python, "assert x == y"),
        (Lang::Python, "assert False"),
        (Lang::Python, "assert x"),
        (Lang::Python, "assert (a) == (b)"),
        (Lang::Python, "assert 1 != 1"),
        (Lang::Python, "assert x is not x"),
        (Lang::Python, "self.assertTrue(ok)"),
        (Lang::Python, "self.assertEqual(add(1, 2), 3)"),
        (Lang::Python, "self.assertEqual(1, 2)"),
        (Lang::Python, "self.assertNotEqual(1, 1.0)"),
        (Lang::Python, "self.assertIsNone(x)"),
        (Lang::Python, "self.assertIn(1, [1])"),
        (Lang::Python, "mock.assert_called_once_with(1)"),
        (Lang::Python, "pytest.raises(ValueError)"),
        (Lang::Js, "expect(sum(1, 2)).toBe(3);"),
        (Lang::Js, "expect(x).toBe(y);"),
        (Lang::Js, "expect(true).not.toBe(true);"),
        (Lang::Js, "expect(1).toBe(2);"),
        (Lang::Js, "expect(false).toBeTruthy();"),
        (Lang::Js, "expect(`${a}`).toBe(`${a}`);"),
        (Lang::Js, "expect(p).resolves.toBe(1);"),
        (Lang::Js, "assert.equal(a, b);"),
        (Lang::Js, "assert(false);"),
        (Lang::Rust, "assert!(ok);"),
        (Lang::Rust, "assert!(false);"),
        (Lang::Rust, "assert_eq!(add(1, 2), 3);"),
        (Lang::Rust, "assert_eq!(1, 2);"),
        (Lang::Rust, "assert_ne!(1, 1);"),
        (Lang::Rust, "assert!(matches!(x, Some(_)));"),
        (Lang::Go, "assert.True(t, ok)"),
        (Lang::Go, "assert.Equal(t, 3, Add(1, 2))"),
        (Lang::Jvm, "assertEquals(3, sum(1, 2));"),
        (Lang::Jvm, "assertThat(x).isEqualTo(y);"),
        (Lang::Php, "$this->assertSame(3, 1 + 2);"),
        (Lang::CSharp, "Assert.Equal(3, Sum(1, 2));"),
        (Lang::Ruby, "assert_equal 3, add(1, 2)"),
        (Lang::Ruby, "refute_equal 1, 1"),
        (Lang::Ruby, "expect(add(1, 2)).to eq(3)"),
        (Lang::Ruby, "expect(1).not_to eq(1)"),
        (Lang::Ruby, "expect { boom }.to raise_error(Boom)"),
    ];
    for (lang, code) in cases {
        assert_eq!(trivial(*lang, code), 0, "{lang:?}: {code}");
    }
}

#[test]
fn non_ascii_code_is_read_without_panicking() {
    assert_eq!(trivial(Lang::Python, "    größe = f(1)\n    assert größe == 2\n"), 0);
    assert_eq!(trivial(Lang::Python, "    self.assertTrue(größe == 3)\n"), 0);
    assert_eq!(trivial(Lang::Python, "    assert \"ö\" == \"ö\"\n"), 1);
    assert_eq!(trivial(Lang::Rust, "    assert_eq!(état(1), 2);\n"), 0);
}
