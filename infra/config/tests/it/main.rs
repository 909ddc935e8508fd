mod files;
mod fuzz;
mod sizes;
mod validate;
