//! Pointers to `#[repr(C)]` structs (`#[derive(Record)]`): a `Ptr<Order>` parameter lent from
//! a slice, offset by whole records, fields read and written through `fields()`; a kernel over
//! an `Array<Order>`; the compile-time checks. `nacre` is the only dependency.

use nacre::gpu::{global_id_x, launch, Array, Block, Grid};
use nacre::prelude::*;
use nacre::Record;

/// An order, as a row of a table.
#[derive(Clone, Copy, Debug, PartialEq, Record)]
#[repr(C)]
struct Order {
    price: f64,
    qty: i32,
    side: u32,
}

/// The value of the buy orders of `orders[0..n]`; marks each counted order's side as 9.
#[jit]
fn buy_value(orders: Ptr<Order>, n: Val<u32>) -> Val<f64> {
    let mut total = Val::new(0.0);
    for i in 0..n {
        let o = orders.offset(i).fields();
        if o.side.read() == 1u32 {
            total += o.price.read() * o.qty.read().cast::<f64>();
            o.side.write(9u32);
        }
    }
    total
}

fn orders() -> Vec<Order> {
    (0..50)
        .map(|i| Order {
            price: 1.5 * i as f64,
            qty: i % 7,
            side: (i % 3) as u32,
        })
        .collect()
}

#[test]
fn fields_are_read_and_written_through_a_record_pointer() {
    for backend in [BackendKind::Interp, BackendKind::Cranelift, BackendKind::C] {
        let engine = Engine::new(Options::with_backend(backend)).unwrap();
        let f = engine.compile(buy_value).unwrap();
        let mut rows = orders();
        let want: f64 = rows
            .iter()
            .filter(|o| o.side == 1)
            .map(|o| o.price * f64::from(o.qty))
            .sum();
        assert_eq!(f.call(&mut rows, 50).unwrap(), want, "{backend:?}");
        let mut expected = orders();
        expected
            .iter_mut()
            .filter(|o| o.side == 1)
            .for_each(|o| o.side = 9);
        assert_eq!(rows, expected, "{backend:?}");
    }
}

#[test]
fn writing_a_field_needs_a_mutable_borrow() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(buy_value).unwrap();
    let rows = orders();
    // `buy_value` writes `side` through a field pointer: a shared borrow is refused.
    let e = f.call(&rows, 50).unwrap_err();
    assert!(matches!(e, nacre::Error::ReadOnlyArgument { .. }), "{e:?}");
    assert_eq!(rows, orders());
}

#[test]
fn a_record_access_past_the_end_traps() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(buy_value).unwrap();
    let mut rows = orders();
    rows[49].side = 1;
    // 51 records from a slice of 50: the 51st is out of bounds.
    let e = f.call(&mut rows, 51).unwrap_err();
    assert!(
        matches!(e, nacre::Error::Trap(nacre::Trap::OutOfBounds { .. })),
        "{e:?}"
    );
}

/// Each thread scales one order's quantity by its side.
#[kernel]
fn scale_orders(orders: Ptr<Order>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        let o = orders.offset(i).fields();
        o.qty.write(o.qty.read() * o.side.read().cast::<i32>());
    }
}

#[jit]
fn run_scale(orders: Ptr<Order>, n: Val<u32>) {
    launch(
        scale_orders,
        Grid::new((n + 31) / 32),
        Block::new(32u32),
        (orders, n),
    );
}

#[test]
fn a_kernel_updates_an_array_of_records() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(run_scale).unwrap();
    let rows = orders();
    let mut arr = Array::copy(&rows).unwrap();
    f.call(&mut arr, 50).unwrap();
    let got = arr.as_slice();
    for (g, o) in got.iter().zip(&rows) {
        assert_eq!(g.qty, o.qty * o.side as i32);
        assert_eq!((g.price, g.side), (o.price, o.side));
    }
}
